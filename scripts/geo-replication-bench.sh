#!/bin/bash
# Geo-replication throughput and lag between two local clusters: two `magnetar standalone`s
# ("east" and "west", their own data and stores, bundle auto-split off so topics stay put)
# that register each other, namespace public/geo replicated to both; magnetar-perf produces
# on east and consumes on west, so the consumer's end-to-end latency (east publish time to
# west receipt) is the replication lag. Run after `make build`, from the project root:
#
#   scripts/geo-replication-bench.sh [RATE] [SIZE] [BATCHING]   # defaults: 0 (no limit) 1024 1
#
# BATCHING 1: 1 ms batches of at most 100 messages; 0: one message per entry.
# LOCAL_SUB=plain|replicated (environment): a consumer on east too, its subscription
# replicated (PIP-33, snapshots every SNAPSHOT_MS, default 1000) or not: the cost of
# replicated subscriptions is the difference between the two runs.
set -u
B=${MAGNETAR_BIN_DIR:-$PWD/build/release/bin}
RATE=${1:-0}
SIZE=${2:-1024}
BATCH=${3:-1}
D=$(mktemp -d -t magnetar-geo-bench.XXXXXX)
trap 'kill $(cat "$D"/*/pid 2>/dev/null) 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
start() {  # name port web bookie
  mkdir -p "$D/$1"
  "$B/magnetar" standalone --data-dir "$D/$1" --set "clusterName=$1" --set "brokerServicePort=$2" \
    --set "webServicePort=$3" --set "bookiePort=$4" --set bindAddress=127.0.0.1 \
    --set loadBalancerAutoBundleSplitEnabled=false \
    --set "replicatedSubscriptionsSnapshotFrequencyMillis=${SNAPSHOT_MS:-1000}" >"$D/$1/log" 2>&1 &
  echo $! >"$D/$1/pid"
}
start east 16650 18080 13181
start west 26650 28080 23181
for _ in $(seq 300); do
  grep -q "standalone ready" "$D/east/log" && grep -q "standalone ready" "$D/west/log" && break
  sleep 0.1
done
admin() { "$B/magnetar-admin" --admin-url "http://127.0.0.1:$1" "${@:2}" >/dev/null || echo "failed: $*"; }
admin 18080 clusters create west --url http://127.0.0.1:28080 --broker-url pulsar://127.0.0.1:26650
admin 28080 clusters create east --url http://127.0.0.1:18080 --broker-url pulsar://127.0.0.1:16650
for port in 18080 28080; do
  admin $port tenants update public --allowed-clusters east,west
  admin $port namespaces create public/geo
  admin $port namespaces set-clusters public/geo --clusters east,west
done
T=persistent://public/geo/bench
BATCHING=(-b 1 --batch-max-messages 100)
[ "$BATCH" = 0 ] && BATCHING=(--disable-batching)
echo "replication east -> west: rate ${RATE} msg/s (0: no limit), ${SIZE} B, batching ${BATCH}"
"$B/magnetar-perf" consume -u pulsar://127.0.0.1:26650 -s sub --test-duration 28 \
  --stats-interval-seconds 5 "$T" >"$D/consume.out" 2>&1 &
consumer=$!
local_consumer=""
if [ -n "${LOCAL_SUB:-}" ]; then
  REPLICATED=(); [ "$LOCAL_SUB" = replicated ] && REPLICATED=(--replicated)
  echo "and a ${LOCAL_SUB} subscription consumed on east"
  "$B/magnetar-perf" consume -u pulsar://127.0.0.1:16650 -s local "${REPLICATED[@]}" \
    --test-duration 28 --stats-interval-seconds 5 "$T" >"$D/consume-east.out" 2>&1 &
  local_consumer=$!
fi
sleep 2
"$B/magnetar-perf" produce -u pulsar://127.0.0.1:16650 -r "$RATE" -s "$SIZE" "${BATCHING[@]}" \
  -o 10000 --test-duration 20 --stats-interval-seconds 5 "$T" >"$D/produce.out" 2>&1
wait $consumer $local_consumer
echo "--- produced on east"
grep Aggregated "$D/produce.out"
echo "--- received on west (latency: east publish to west receipt)"
grep Aggregated "$D/consume.out"
if [ -n "$local_consumer" ]; then
  echo "--- received on east (${LOCAL_SUB} subscription)"
  grep Aggregated "$D/consume-east.out"
  echo "--- east's subscription"
  curl -s http://127.0.0.1:18080/admin/v2/persistent/public/geo/bench/stats |
    python3 -c 'import json,sys; s=json.load(sys.stdin)["subscriptions"].get("local",{}); print({k: s.get(k) for k in ("isReplicated","msgBacklog")})'
fi
