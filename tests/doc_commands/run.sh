#!/usr/bin/env bash
# Runs the Pulsar documentation command lines of commands.txt (next to this script) against a
# fresh `magnetar standalone` and checks each one's exit code and output.
#
#   usage: run.sh <bin-dir> <work-dir>
#
# <bin-dir> holds magnetar, magnetar-admin, magnetar-client and magnetar-perf. <work-dir> gets
# the standalone's data (<work-dir>/data, wiped first), its log, client.conf and the cwd of the
# commands (<work-dir>/run). Needs only bash, coreutils, grep and sed. Exit code 0 when every
# entry passed, 1 otherwise (or when the standalone does not start).
# Environment: DOC_COMMANDS_TIMEOUT (seconds per entry, 60), DOC_COMMANDS_ONLY (an ERE: run only
# the entries whose command matches; the others are not run, so later ones may miss resources).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 <bin-dir> <work-dir>" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$(cd "$1" && pwd)
mkdir -p "$2"
work=$(cd "$2" && pwd)
list="$here/commands.txt"
timeout_s=${DOC_COMMANDS_TIMEOUT:-60}
only=${DOC_COMMANDS_ONLY:-}

for tool in magnetar magnetar-admin magnetar-client magnetar-perf; do
  if [[ ! -x "$bin/$tool" ]]; then
    echo "error: $bin/$tool is missing or not executable" >&2
    exit 2
  fi
done

# --- free ports -------------------------------------------------------------------------------
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
picked=" "
pick_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 20001))
    if [[ $picked != *" $p "* ]] && ! port_in_use "$p"; then
      picked+="$p "
      echo "$p"
      return 0
    fi
  done
  echo "error: no free port found in 20000-40000" >&2
  return 1
}
# Called directly (not in $(...)) so that `picked` keeps what was chosen.
pick_into() { local _p; _p=$(picked=$picked pick_port) || exit 2; picked+="$_p "; printf -v "$1" %s "$_p"; }
pick_into broker_port
pick_into web_port
pick_into bookie_port

# --- the standalone ---------------------------------------------------------------------------
rm -rf "$work/data" "$work/run"
mkdir -p "$work/data" "$work/run"
log="$work/standalone.log"
: >"$log"
standalone_pid=""
stop_standalone() {
  [[ -n $standalone_pid ]] || return 0
  if kill -0 "$standalone_pid" 2>/dev/null; then
    kill -TERM "$standalone_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 150; i++)); do
      kill -0 "$standalone_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$standalone_pid" 2>/dev/null || true
  fi
  wait "$standalone_pid" 2>/dev/null || true
  standalone_pid=""
}
trap stop_standalone EXIT
trap 'exit 130' INT TERM

"$bin/magnetar" standalone --data-dir "$work/data" \
  --set "brokerServicePort=$broker_port" --set "webServicePort=$web_port" \
  --set "bookiePort=$bookie_port" --set bindAddress=127.0.0.1 \
  </dev/null >"$log" 2>&1 &
standalone_pid=$!

ready=0
for ((i = 0; i < 600; i++)); do
  if grep -q "standalone ready" "$log"; then
    ready=1
    break
  fi
  if ! kill -0 "$standalone_pid" 2>/dev/null; then
    break
  fi
  sleep 0.1
done
if [[ $ready -ne 1 ]]; then
  echo "error: the standalone did not report \"standalone ready\" within 60 s; its log ($log):" >&2
  tail -n 40 "$log" >&2
  exit 1
fi

# What the standalone advertises (localhost, as pulsar standalone) names its broker.
export WEB_ADDR="localhost:$web_port"
export WEB_URL="http://localhost:$web_port"
export BROKER_URL="pulsar://localhost:$broker_port"
cat >"$work/client.conf" <<EOF
webServiceUrl=$WEB_URL
brokerServiceUrl=$BROKER_URL
EOF
# magnetar-admin reads webServiceUrl, magnetar-client and magnetar-perf brokerServiceUrl from it.
export PULSAR_CLIENT_CONF="$work/client.conf"
export PATH="$bin:$PATH"
export LC_ALL=C

# The docs' schema files (admin-api-schemas.md S1 example; 2.10.x schema-manage.md Example 2).
cat >"$work/run/schema-json.json" <<'EOF'
{
    "type": "JSON",
    "schema": "{\"type\":\"record\",\"name\":\"User\",\"namespace\":\"com.foo\",\"fields\":[{\"name\":\"file1\",\"type\":[\"null\",\"string\"],\"default\":null},{\"name\":\"file2\",\"type\":[\"null\",\"string\"],\"default\":null},{\"name\":\"file3\",\"type\":[\"string\",\"null\"],\"default\":\"dfdf\"}]}",
    "properties": {}
}
EOF
cat >"$work/run/schema-string.json" <<'EOF'
{
    "type": "STRING",
    "schema": "",
    "properties": {
        "key1": "value1"
    }
}
EOF

echo "standalone: $BROKER_URL, $WEB_URL (log: $log)"

# --- checks -----------------------------------------------------------------------------------
# Each sets `why` and returns 1 on failure. $1: the check's argument; stdout/stderr in $out/$err.
count_lines() { # lines of $1 (0 for empty)
  if [[ -z $1 ]]; then echo 0; else wc -l <<<"$1" | tr -d " "; fi
}
subst_env() { # the named placeholders of a check
  local s=$1
  s=${s//'$BROKER_URL'/$BROKER_URL}
  s=${s//'$WEB_URL'/$WEB_URL}
  s=${s//'$WEB_ADDR'/$WEB_ADDR}
  printf '%s' "$s"
}
run_check() {
  local check=$1 arg n re got
  case $check in
    out=*)
      arg=$(subst_env "${check#out=}")
      arg=$(printf '%b' "$arg")
      if [[ $out != "$arg" ]]; then
        why="stdout is not exactly: $(printf '%q' "$arg")"
        return 1
      fi
      ;;
    re=*)
      re=$(subst_env "${check#re=}")
      if ! grep -Eq -- "$re" <<<"$out"; then
        why="no stdout line matches: $re"
        return 1
      fi
      ;;
    err=*)
      re=$(subst_env "${check#err=}")
      if ! grep -Eq -- "$re" <<<"$err"; then
        why="no stderr line matches: $re"
        return 1
      fi
      ;;
    count=*)
      arg=${check#count=}
      n=${arg%%:*}
      re=$(subst_env "${arg#*:}")
      if [[ -z $out ]]; then got=0; else got=$(grep -Ec -- "$re" <<<"$out" || true); fi
      if [[ $got != "$n" ]]; then
        why="$got stdout lines (not $n) match: $re"
        return 1
      fi
      ;;
    lines=*)
      n=${check#lines=}
      got=$(count_lines "$out")
      if [[ $got != "$n" ]]; then
        why="stdout has $got lines, not $n"
        return 1
      fi
      ;;
    json)
      # No JSON parser is assumed: one object or array, i.e. {...} or [...] after trimming.
      local t=$out first last
      t=${t#"${t%%[![:space:]]*}"}
      t=${t%"${t##*[![:space:]]}"}
      first=${t:0:1}
      last=${t: -1}
      if ! [[ ($first == "{" && $last == "}") || ($first == "[" && $last == "]") ]]; then
        why="stdout is not a JSON object or array"
        return 1
      fi
      ;;
    *)
      why="unknown check: $check"
      return 1
      ;;
  esac
  return 0
}

show() { # indented, at most 15 lines
  local label=$1 text=$2 n
  [[ -n $text ]] || { echo "    $label: (empty)"; return; }
  n=$(count_lines "$text")
  echo "    $label:"
  sed -n "1,15s/^/      /p" <<<"$text"
  if ((n > 15)); then echo "      ... ($((n - 15)) more lines)"; fi
}

# --- the entries ------------------------------------------------------------------------------
# An entry after a `# known: <reason>` comment is a difference from Pulsar not closed yet (the
# reason says what is missing): its failure is reported as `known` and does not fail the run;
# its passing does ("fixed": drop the mark), so the list never hides a fixed or new difference.
total=0 passed=0 failed=0 skipped=0 known=0 lineno=0 source="" known_reason=""
failures=()
while IFS= read -r line || [[ -n $line ]]; do
  lineno=$((lineno + 1))
  line=${line%$'\r'}
  if [[ $line =~ ^[[:space:]]*#[[:space:]]*known:[[:space:]]*(.*)$ ]]; then
    known_reason=${BASH_REMATCH[1]}
    continue
  fi
  if [[ $line =~ ^[[:space:]]*# ]]; then
    # The last comment naming a doc file is the source shown with a failure.
    if [[ $line == "# "*.md* ]]; then source=${line#\# }; fi
    continue
  fi
  [[ $line =~ [^[:space:]] ]] || continue
  if [[ $line != *" | "* ]]; then
    echo "error: commands.txt:$lineno: no ' | ' separator: $line" >&2
    exit 2
  fi
  expected=${line%%" | "*}
  rest=${line#*" | "}
  checks=""
  if [[ $rest == *" | "* ]]; then
    cmd=${rest%%" | "*}
    checks=${rest#*" | "}
  else
    cmd=$rest
  fi
  expected=${expected//[[:space:]]/}
  if ! [[ $expected =~ ^[0-9]+$ ]]; then
    echo "error: commands.txt:$lineno: bad exit code '$expected'" >&2
    exit 2
  fi
  total=$((total + 1))
  entry_known=$known_reason
  known_reason=""
  if [[ -n $only ]] && ! [[ $cmd =~ $only ]]; then
    skipped=$((skipped + 1))
    continue
  fi

  errfile="$work/run/.stderr"
  set +e
  out=$(cd "$work/run" && timeout -k 5 "$timeout_s" bash -c "$cmd" </dev/null 2>"$errfile")
  rc=$?
  set -e
  err=$(cat "$errfile")

  problems=()
  if [[ $rc -ne $expected ]]; then
    if [[ $rc -eq 124 ]]; then
      problems+=("timed out after ${timeout_s} s (expected exit $expected)")
    else
      problems+=("exit code $rc, expected $expected")
    fi
  fi
  if [[ -n $checks && $rc -ne 124 ]]; then
    rest=$checks
    while :; do
      if [[ $rest == *" && "* ]]; then
        one=${rest%%" && "*}
        rest=${rest#*" && "}
      else
        one=$rest
        rest=""
      fi
      why=""
      run_check "$one" || problems+=("$why")
      [[ -n $rest ]] || break
    done
  fi

  if [[ -n $entry_known ]]; then
    if ((${#problems[@]} == 0)); then
      failed=$((failed + 1))
      failures+=("$total")
      echo "FIXED $total: $cmd"
      echo "    marked known ($entry_known) but it passes: remove the mark (commands.txt:$lineno)"
    else
      known=$((known + 1))
      echo "known $total: $cmd"
      echo "    $entry_known; ${problems[0]}"
    fi
  elif ((${#problems[@]} == 0)); then
    passed=$((passed + 1))
    echo "ok $total: $cmd"
    # A refusal that passed: show why, to tell a right refusal from an unrelated one.
    if [[ $expected -ne 0 ]]; then echo "    (exit $rc; stderr: ${err%%$'\n'*})"; fi
  else
    failed=$((failed + 1))
    failures+=("$total")
    echo "FAIL $total: $cmd"
    echo "    doc: $source (commands.txt:$lineno)"
    for p in "${problems[@]}"; do echo "    $p"; done
    show stdout "$out"
    show stderr "$err"
  fi
done <"$list"

if ! kill -0 "$standalone_pid" 2>/dev/null; then
  echo "note: the standalone is no longer running; the end of its log ($log):"
  tail -n 20 "$log"
fi
echo
echo "$total entries: $passed ok, $known known differences, $failed failed$( ((skipped > 0)) && echo ", $skipped not run")"
if ((failed > 0)); then
  echo "failed: ${failures[*]}"
  exit 1
fi
exit 0
