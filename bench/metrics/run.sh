#!/usr/bin/env bash
# run.sh - what the worker's Prometheus metrics cost: runs bench/metrics/metrics_bench.c (built
# by `make`, public API only) against BUILD_DIR's libferry, starts a
# private Redis with scripts/testenv.sh (stopped on exit) and runs the no-op worker without
# and with a registry, alternating, at concurrency 100: every run, the medians and the ratio
# metrics/none (goal >= 0.97). Exit status: 0, 1 when a run failed, 2 without the build.
#
#   bench/metrics/run.sh [BUILD_DIR]     (default: build)
#
# Environment: BENCH_JOBS (default 50000), BENCH_ROUNDS (default 5), BENCH_CONCURRENCY
# (default 100).
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
[[ -e $build/libferry.so ]] || { echo "run.sh: no $build/libferry.so (build first)" >&2; exit 2; }
# shellcheck source=../lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build/ferry" # the library it links is the same build's
[[ -x $build/bench/metrics_bench ]] ||
    { echo "run.sh: no $build/bench/metrics_bench (make all builds it)" >&2; exit 2; }
envdir=$(mktemp -d /tmp/ferry-bench-metrics-XXXXXX)
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() { "$root/scripts/testenv.sh" stop "$envdir" >/dev/null 2>&1 || true; rm -rf "$envdir"; }
trap cleanup EXIT
# No AOF (as scripts/redis-private.sh): a benchmark measures the worker, not fsync.
"$root/scripts/testenv.sh" start "$envdir" --redis-persist none >/dev/null
REDIS_URL=$(sed -n 's/^REDIS_URL=//p' "$envdir/env")
"$build/bench/metrics_bench" "$REDIS_URL" "${BENCH_JOBS:-50000}" "${BENCH_ROUNDS:-5}" \
    "${BENCH_CONCURRENCY:-100}"
