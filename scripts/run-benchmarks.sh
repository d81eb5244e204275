#!/usr/bin/env bash
# Runs every Google Benchmark binary of a build: scripts/run-benchmarks.sh BUILD_DIR [ARGS...]
# Extra arguments go to each binary (e.g. --benchmark_filter=Crc).
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [benchmark args...]" >&2
  exit 2
fi
build_dir=$1
shift

shopt -s nullglob
benches=("$build_dir"/bin/*_bench)
if [[ ${#benches[@]} -eq 0 ]]; then
  echo "run-benchmarks: no *_bench binaries in $build_dir/bin (configure with -DMAGNETAR_BENCH=ON)" >&2
  exit 1
fi

status=0
for bench in "${benches[@]}"; do
  [[ -x "$bench" ]] || continue
  echo "=== $(basename "$bench") ==="
  # This Google Benchmark (1.7.1) takes the minimum time as a plain number of seconds.
  "$bench" --benchmark_min_time=0.2 "$@" || status=1
done
exit $status
