#!/usr/bin/env bash
# Installs every Debian package Magnetar needs to build, test and run.
# Idempotent: when everything is present it only runs `dpkg-query` and exits.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config clang libclang-rt-14-dev
  libboost-all-dev protobuf-compiler libprotobuf-dev
  librocksdb-dev zookeeper libzookeeper-mt-dev default-jre-headless
  etcd-server etcd-client libgrpc++-dev protobuf-compiler-grpc
  libssl-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  liblz4-dev libzstd-dev libsnappy-dev zlib1g-dev libjemalloc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  fio procps
  # The web console's browser test (src/console/tests/browser): Debian's Chromium, and a font.
  chromium fonts-dejavu-core
)
# Node.js and npm for that test: Debian's, unless a node is installed already (another
# distribution's nodejs package brings its own npm, and Debian's npm would conflict with it).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
$SUDO apt-get update -qq >/dev/null
log=$(mktemp)
if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  cat "$log"; echo "install-deps: apt-get install failed" >&2; exit 1
fi
rm -f "$log"
