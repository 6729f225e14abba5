#!/usr/bin/env bash
# run.sh - `ferry relay` vs a polling outbox relay in Node on one private PostgreSQL + Redis.
#
#   bench/relay/run.sh [BUILD_DIR]      (default: build; FERRY_BIN overrides the binary)
#
# Starts private servers with scripts/testenv.sh (stopped on exit), installs the Node
# packages of bench/relay with `npm ci` when missing, and runs bench.js, which prints a
# markdown table. Knobs (environment): BENCH_ROUNDS, BENCH_ROWS, LAT_SECONDS, LAT_RATE,
# BENCH_ONLY, FERRY_BATCH; see bench.js.
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=${1:-$root/build}
FERRY_BIN=${FERRY_BIN:-$build/ferry}
[[ -x $FERRY_BIN ]] || { echo "run.sh: no ferry binary at $FERRY_BIN (build first)" >&2; exit 2; }
command -v node >/dev/null || { echo "run.sh: node is required" >&2; exit 2; }
# shellcheck source=../lib.sh
. "$root/bench/lib.sh"
bench_check_build "$FERRY_BIN" # a debug or sanitizer build is refused (BENCH_ANY_BUILD=1 allows it)
if [[ ! -d $here/node_modules/pg || ! -d $here/node_modules/bullmq ]]; then
    (cd "$here" && npm ci --no-audit --no-fund >/dev/null)
fi
envdir=$(mktemp -d /tmp/ferry-bench-relay-XXXXXX)
chmod 755 "$envdir" # the PostgreSQL server runs as user postgres when we are root
cleanup() { "$root/scripts/testenv.sh" stop "$envdir" >/dev/null 2>&1 || true; rm -rf "$envdir"; }
trap cleanup EXIT
# No AOF: make bench's server does not persist either, and the relays are compared, not fsync.
"$root/scripts/testenv.sh" start "$envdir" --with-postgres --redis-persist "${BENCH_REDIS_PERSIST:-none}" >&2
DATABASE_URL=$(sed -n 's/^DATABASE_URL=//p' "$envdir/env")
REDIS_URL=$(sed -n 's/^REDIS_URL=//p' "$envdir/env")
export DATABASE_URL REDIS_URL FERRY_BIN
node "$here/bench.js"
