#!/usr/bin/env bash
# Throughput and publish latency through `magnetar proxy` beside direct to the broker, in one
# run: a `magnetar standalone` (fsync on), a proxy in front of it (static discovery), and
# magnetar-perf producer/consumer pairs against each, one after the other (twice each, in
# opposite orders).
#   scripts/proxy-bench.sh [BUILD_DIR] [SECONDS]
#   PROXY_SET="proxyZeroCopyModeEnabled=false" scripts/proxy-bench.sh   (extra proxy keys)
# Prints one table row per (path, load); docs/performance.md keeps the figures.
set -euo pipefail
build=${1:-build/release}
seconds=${2:-15}
bin="$build/bin"
work=$(mktemp -d -t magnetar-proxy-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
wait_port() { local i; for ((i = 0; i < 300; i++)); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

"$bin/magnetar" standalone --data-dir "$work/data" --set bindAddress=127.0.0.1 \
  --set advertisedAddress=127.0.0.1 --set brokerServicePort=16650 --set webServicePort=18080 \
  >"$work/standalone.log" 2>&1 &
pids+=($!)
wait_port 16650 && wait_port 18080 || { tail -20 "$work/standalone.log"; exit 1; }
"$bin/magnetar" proxy --set bindAddress=127.0.0.1 --set servicePort=26650 --set webServicePort=28080 \
  --set brokerServiceURL=pulsar://127.0.0.1:16650 --set brokerWebServiceURL=http://127.0.0.1:18080 \
  --set brokerProxyAllowedTargetPorts=16650 ${PROXY_SET:+--set $PROXY_SET} >"$work/proxy.log" 2>&1 &
pids+=($!)
wait_port 26650 || { tail -20 "$work/proxy.log"; exit 1; }

# One producer/consumer pair; prints "msg/s publish-p50 publish-p99 e2e-p50 e2e-p99".
run() {  # url topic rate(0: unlimited) extra-producer-flags...
  local url=$1 topic=$2 rate=$3; shift 3
  "$bin/magnetar-perf" consume -u "$url" -s sub -time $((seconds + 3)) --json "$work/c.json" \
    "persistent://public/default/$topic" >"$work/c.log" 2>&1 &
  local consumer=$!
  sleep 1
  "$bin/magnetar-perf" produce -u "$url" -r "$rate" -s 1024 -o 1000 -time "$seconds" \
    --json "$work/p.json" "$@" "persistent://public/default/$topic" >"$work/p.log" 2>&1
  wait "$consumer" || true
  python3 - "$work/p.json" "$work/c.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
print("%.0f msg/s | publish p50 %.2f p99 %.2f ms | end to end p50 %.2f p99 %.2f ms | received %d of %d" % (
    p["throughput_msg_per_sec"], p["latency_ms"]["p50"], p["latency_ms"]["p99"],
    c["latency_ms"]["p50"], c["latency_ms"]["p99"], c["messages"], p["messages"]))
PY
}

# A short warm-up (the first ledger, the entry log, the page cache), not reported.
run pulsar://127.0.0.1:16650 warm-up 0 >/dev/null
echo "| path | load | result |"
echo "|---|---|---|"
# Two repetitions in opposite orders, so neither path always runs first.
for load in "0 batched" "10000 unbatched" "0 unbatched"; do
  set -- $load
  rate=$1; mode=$2
  flags=(); [ "$mode" = unbatched ] && flags=(--disable-batching)
  for path in direct proxy proxy direct; do
    url=pulsar://127.0.0.1:16650; [ "$path" = proxy ] && url=pulsar://127.0.0.1:26650
    echo "| $path | ${rate/#0/max} msg/s, $mode, 1 KiB | $(run "$url" "bench-$path-$rate-$mode-$RANDOM" "$rate" "${flags[@]}") |"
  done
done
