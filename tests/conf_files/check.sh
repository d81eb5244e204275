#!/bin/bash
# The configuration files shipped in conf/ are what each role prints with
# --print-conf-template (every key with its default and its help): a key added, renamed or
# redocumented without regenerating its file fails here. Regenerate with
#   build/release/bin/magnetar <role> --print-conf-template > conf/<file>
set -u
bin=$1 conf=$2
status=0
for pair in broker:broker.conf standalone:standalone.conf bookie:bookkeeper.conf proxy:proxy.conf; do
  role=${pair%%:*} file=${pair#*:}
  if ! "$bin" "$role" --print-conf-template | diff -u "$conf/$file" - ; then
    echo "conf/$file differs from 'magnetar $role --print-conf-template' (diff above)" >&2
    status=1
  fi
done
exit $status
