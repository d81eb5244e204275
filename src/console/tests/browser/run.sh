#!/usr/bin/env bash
# The web console in headless Chromium (README.md beside this file), as ctest runs it:
#   run.sh <magnetar binary> <magnetar-client binary> <output folder>
# Needs node, npm and Debian's chromium (scripts/install-deps.sh installs them). playwright-core,
# pinned by package-lock.json, is installed here with `npm ci` the first time and whenever the
# lock names another version; after that the test needs no network.
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: $0 <magnetar> <magnetar-client> <output folder>" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
chromium=${MAGNETAR_CHROMIUM:-/usr/bin/chromium}
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "console_browser_test: $tool not found: run scripts/install-deps.sh (make deps)" >&2
    exit 1
  fi
done
if [[ ! -x "$chromium" ]]; then
  echo "console_browser_test: $chromium not found: run scripts/install-deps.sh (make deps)" >&2
  exit 1
fi

installed() {
  local want have
  want=$(node -e 'const l = require(process.argv[1]); console.log(l.packages["node_modules/playwright-core"].version)' \
    "$here/package-lock.json")
  have=$(node -e 'console.log(require(process.argv[1]).version)' \
    "$here/node_modules/playwright-core/package.json" 2>/dev/null || true)
  [[ "$want" == "$have" ]]
}
if ! installed; then
  # One install at a time (two test runs may start together).
  exec 9>"${TMPDIR:-/tmp}/magnetar-console-npm.lock"
  flock 9
  if ! installed; then
    (cd "$here" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
  fi
  flock -u 9
fi

mkdir -p "$3"
exec node "$here/console_browser_test.mjs" --magnetar "$1" --client "$2" --out "$3" --chromium "$chromium"
