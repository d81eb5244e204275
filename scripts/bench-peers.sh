#!/usr/bin/env bash
# The side-by-side peers harness (../shared/peers/run-all.sh: NATS JetStream, Redis Streams,
# RabbitMQ and this checkout's `magnetar standalone`, all driven the same way) against the
# build in BUILD_DIR. Run from the project root (`make bench-peers`); extra arguments go to
# run-all.sh, e.g. `make bench-peers PEERS_ARGS='--no-install --peers "redis pulsar"'`.
#   scripts/bench-peers.sh [BUILD_DIR] [run-all.sh arguments...]
# Needs PULSAR_CPP_HOME: the official Apache Pulsar C++ client, built outside this repository
# (nothing of it is ever committed here). docs/performance.md keeps the tables.
set -euo pipefail
build=${1:-build/release}
shift || true
peers=${PEERS_DIR:-../shared/peers}

if [ ! -x "$peers/run-all.sh" ]; then
  echo "bench-peers: the harness $peers/run-all.sh is not there (set PEERS_DIR)" >&2
  exit 1
fi
magnetar="$PWD/$build/bin/magnetar"
if [ ! -x "$magnetar" ]; then
  echo "bench-peers: $magnetar is not built (make build)" >&2
  exit 1
fi
if [ -z "${PULSAR_CPP_HOME:-}" ] || [ ! -r "$PULSAR_CPP_HOME/include/pulsar/Client.h" ]; then
  cat >&2 <<MSG
bench-peers: PULSAR_CPP_HOME must name a build of the official Apache Pulsar C++ client
(include/pulsar/Client.h and build/lib/libpulsar.so or lib/libpulsar.so)${PULSAR_CPP_HOME:+; '$PULSAR_CPP_HOME' has no include/pulsar/Client.h}.
Build it outside this repository (about 10 minutes on 2 cores), as $peers/README.md says:
  - take its public source (apache/pulsar-client-cpp) into a scratch folder, e.g. /work/pcc-build;
  - install Debian's libcurl4-openssl-dev libssl-dev zlib1g-dev libboost-program-options-dev
    beside the project's own dependencies;
  - cmake -B build -DBUILD_TESTS=OFF -DBUILD_PERF_TOOLS=ON -DBUILD_STATIC_LIB=OFF
    cmake --build build -j2
then: PULSAR_CPP_HOME=/work/pcc-build make bench-peers
MSG
  exit 1
fi
# run-all.sh takes MAGNETAR_BIN relative to nothing: an absolute path to this checkout's build.
export MAGNETAR_BIN="$magnetar" PULSAR_CPP_HOME
exec "$peers/run-all.sh" "$@"
