#!/usr/bin/env bash
# Runs every libFuzzer target of a sanitizer build for a bounded time each.
#   run-fuzzers.sh BUILD_DIR SECONDS
# A crash, leak, sanitizer report or timeout fails the run; the reproducer is kept in
# BUILD_DIR/fuzz-artifacts/.
set -euo pipefail
build=${1:?build dir}
seconds=${2:-20}
bin="$build/bin"
work="$build/fuzz-work"
artifacts="$build/fuzz-artifacts"
rm -rf "$work"
mkdir -p "$work/frame_decoder_fuzz" "$work/batch_parser_fuzz" "$work/bookie_frame_fuzz" \
  "$work/jwt_fuzz" "$work/compacted_entry_fuzz" "$work/etcd_keys_fuzz" "$work/proxy_input_fuzz" \
  "$artifacts"
"$bin/fuzz_seeds" "$work/frame_decoder_fuzz" "$work/batch_parser_fuzz"

passed=0
failed=0
# A token's shape, so the JWT fuzzer starts past the three-part split.
printf 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl' >"$work/jwt_fuzz/seed"
# A compacted entry: the id header of position 3:7 around an empty stored entry.
printf '\x00\x00\x00\x04\x08\x03\x10\x07' >"$work/compacted_entry_fuzz/seed"
# An etcd node key and a node value with its header.
printf '/n/002/a/b' >"$work/etcd_keys_fuzz/key"
printf '\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02v' >"$work/etcd_keys_fuzz/value"
# A proxy target, and the frames fuzz_seeds wrote (a CONNECT among them) for the proxy's decoder.
printf 'b1.brokers.internal:6650' >"$work/proxy_input_fuzz/target"
cp "$work/frame_decoder_fuzz/"* "$work/proxy_input_fuzz/" 2>/dev/null || true
for target in frame_decoder_fuzz batch_parser_fuzz bookie_frame_fuzz jwt_fuzz compacted_entry_fuzz \
    etcd_keys_fuzz proxy_input_fuzz; do
  echo "fuzz: $target for ${seconds}s"
  if "$bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=70000 \
      -print_final_stats=1 -artifact_prefix="$artifacts/$target-" "$work/$target" \
      >"$work/$target.log" 2>&1; then
    grep -E "stat::number_of_executed_units|Done" "$work/$target.log" | tail -2
    passed=$((passed + 1))
  else
    tail -40 "$work/$target.log"
    echo "fuzz: $target FAILED (artifacts in $artifacts)"
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
