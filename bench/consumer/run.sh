#!/usr/bin/env bash
# run.sh - what the consumer-side features cost (`make bench-consumer`), on private servers
# started here with scripts/testenv.sh (Redis and PostgreSQL) and stopped on exit:
#   - an exec-free C worker's throughput with a payload contract registered vs none
#     (bench/consumer/contract_bench.c, on Redis): ratio contract/none;
#   - an effect committed through the inbox (ferry_inbox_run) vs as a bare transaction, and a
#     redelivered (duplicate) id vs the bare transaction (bench/consumer/inbox_bench.c, on
#     PostgreSQL): ratios inbox/bare and duplicate/bare.
# Each program runs its sides alternately in one run and prints every run, the medians and
# the ratios. Exit status: 0, 1 when a run failed, 2 without the programs.
#
#   bench/consumer/run.sh [BUILD_DIR]     (default: build)
#
# Environment: BENCH_JOBS (default 20000), BENCH_ROUNDS (default 3, both programs),
# BENCH_CONCURRENCY (default 1), BENCH_INBOX_OPS (default 5000: transactions per inbox run).
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=${1:-$root/build}
for b in contract_bench inbox_bench; do
    [[ -x $build/bench/$b ]] || { echo "run.sh: no $build/bench/$b (build first: make all)" >&2; exit 2; }
done
# shellcheck source=../lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build/ferry" # the library they link is the same build's
envdir=$(mktemp -d /tmp/ferry-bench-consumer-XXXXXX)
chmod 755 "$envdir" # the PostgreSQL server runs as user postgres when we are root
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() { "$root/scripts/testenv.sh" stop "$envdir" >/dev/null 2>&1 || true; rm -rf "$envdir"; }
trap cleanup EXIT
# No AOF (as scripts/redis-private.sh): a benchmark measures the worker, not fsync. The
# PostgreSQL cluster runs with fsync and synchronous_commit off (scripts/lib.sh).
"$root/scripts/testenv.sh" start "$envdir" --with-postgres --redis-persist none >/dev/null
REDIS_URL=$(sed -n 's/^REDIS_URL=//p' "$envdir/env")
DATABASE_URL=$(sed -n 's/^DATABASE_URL=//p' "$envdir/env")
rounds=${BENCH_ROUNDS:-3}
# Both run even when the first fails; the exit status is 1 when either did.
rc=0
"$build/bench/contract_bench" "$REDIS_URL" "${BENCH_JOBS:-20000}" "$rounds" "${BENCH_CONCURRENCY:-1}" || rc=1
"$build/bench/inbox_bench" "$DATABASE_URL" "${BENCH_INBOX_OPS:-5000}" "$rounds" || rc=1
exit "$rc"
