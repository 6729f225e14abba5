#!/usr/bin/env bash
# run.sh - what the consumer-side features cost (`make bench-consumer`): an exec-free C worker's
# throughput with a payload contract registered vs none (bench/consumer/contract_bench.c), on
# a private Redis started here and stopped on exit. Both sides run alternately in one run;
# the ratio contract/none is printed with the medians.
#
#   bench/consumer/run.sh [BUILD_DIR]     (default: build)
#
# Environment: BENCH_JOBS (default 20000), BENCH_ROUNDS (default 3), BENCH_CONCURRENCY
# (default 1).
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=${1:-$root/build}
bin=$build/bench/contract_bench
[[ -x $bin ]] || { echo "run.sh: no $bin (build first: make all)" >&2; exit 2; }
# shellcheck source=../lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build/ferry" # the library it links is the same build's
envdir=$(mktemp -d /tmp/ferry-bench-consumer-XXXXXX)
cleanup() { "$root/scripts/redis-private.sh" stop "$envdir" >/dev/null 2>&1 || true; rm -rf "$envdir"; }
trap cleanup EXIT
"$root/scripts/redis-private.sh" start "$envdir" >/dev/null
REDIS_URL=$(sed -n 's/^REDIS_URL=//p' "$envdir/env")
"$bin" "$REDIS_URL" "${BENCH_JOBS:-20000}" "${BENCH_ROUNDS:-3}" "${BENCH_CONCURRENCY:-1}"
