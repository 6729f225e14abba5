#!/usr/bin/env bash
# run.sh - ferry vs BullMQ Node benchmark (`make bench`): starts a private Redis, runs the Node
# baseline (bench/node/bullmq_bench.js) and `ferry bench` alternately (Node first in odd rounds,
# ferry first in even ones) on that same Redis for every scenario, each run after an untimed
# warm-up of the same work in the same process, measures Redis CPU around each run (INFO cpu), and
# prints a table of medians and ferry/Node ratios, also written to BUILD/bench-results.md.
#
#   bench/run.sh BUILD_DIR
#
# Environment:
#   BENCH_ROUNDS=N      rounds per scenario and implementation (default 3, minimum 1)
#   BENCH_JOBS=N        job count for every throughput scenario (default: per scenario, below);
#                       the latency scenario uses min(N, its default)
#   BENCH_ONLY="a b"    run only these scenarios (names as in the table: addbulk add process-c1
#                       process-c10 process-c100 latency)
#   BENCH_PAYLOAD=B     job data size in bytes (default 100)
#   FERRY_BIN=PATH      ferry CLI to measure (default BUILD_DIR/ferry); it must be an optimised
#                       build without sanitizers (`ferry --version` says), unless BENCH_ANY_BUILD=1
# Raw per-run results: BUILD/bench-results.jsonl. See bench/README.md for how to read the table.
# Exit status: 0 when every run succeeded, 1 when some failed (the table is still printed and
# names them), 2 for bad arguments.
set -euo pipefail

usage() {
    sed -n '7,21s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
    exit 2
}
[[ $# -eq 1 && $1 != -h && $1 != --help ]] || usage

SRC=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd -- "$1" && pwd) || { echo "run.sh: no build directory $1" >&2; exit 2; }
FERRY=${FERRY_BIN:-$BUILD/ferry}
ROUNDS=${BENCH_ROUNDS:-3}
PAYLOAD=${BENCH_PAYLOAD:-100}
ONLY=${BENCH_ONLY:-}
NODE_BENCH=$SRC/bench/node/bullmq_bench.js
RESULTS=$BUILD/bench-results.jsonl
REPORT=$BUILD/bench-results.md
RDIR=$BUILD/bench-redis
QUEUE=bench
RUN_TIMEOUT_S=600

msg() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }

[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "BENCH_ROUNDS must be a positive integer"
[[ -z ${BENCH_JOBS:-} || ${BENCH_JOBS} =~ ^[1-9][0-9]*$ ]] || die "BENCH_JOBS must be a positive integer"
[[ $PAYLOAD =~ ^[1-9][0-9]*$ ]] || die "BENCH_PAYLOAD must be a positive integer"
[[ -x $FERRY ]] || die "ferry CLI not found at $FERRY (build first, or set FERRY_BIN)"
# A debug or sanitizer build would be measured as ferry: refuse it
# shellcheck source=lib.sh
. "$SRC/bench/lib.sh"
bench_check_build "$FERRY"
for t in node redis-cli jq timeout; do command -v "$t" >/dev/null || die "missing $t (scripts/install-deps.sh)"; done

export NODE_PATH=$SRC/tests/interop/node_modules
if [[ ! -d $NODE_PATH/bullmq ]]; then
    msg "installing the Node baseline (npm ci in tests/interop)"
    (cd "$SRC/tests/interop" && npm ci --no-audit --no-fund >/dev/null) || die "npm ci failed"
fi

# Scenarios: name mode jobs concurrency. Defaults keep a 3-round run under ~10 minutes on a
# 2-core box (the Node side dominates).
SCENARIOS=(
    "addbulk addbulk 50000 1"
    "add add 10000 1"
    "process-c1 process 20000 1"
    "process-c10 process 50000 10"
    "process-c100 process 50000 100"
    "latency latency 2500 10"
)
LATENCY_RATE=500
# Untimed warm-up per run (same process, same work: see --warmup in both tools): start-up and
# V8's JIT warm-up cost Node 10-25% of a cold run's rate, ferry about 2% (measured by the
# 2026-11-30 benchmark review, per 5,000-job segment of single runs).
warmup_for() { # MODE JOBS
    if [[ $1 == latency ]]; then echo 500; elif (($2 / 10 > 2000)); then echo $(($2 / 10)); else echo 2000; fi
}

# --- private Redis --------------------------------------------------------------------------
# Measured commands run in the background and are waited for, so a signal to run.sh is
# handled at once: the running command is killed, then the EXIT trap stops Redis.
child=""
TMP=$(mktemp -d)
cleanup() {
    [[ -n $child ]] && kill "$child" 2>/dev/null
    rm -rf "$TMP"
    "$SRC/scripts/redis-private.sh" stop "$RDIR" || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
url=$("$SRC/scripts/redis-private.sh" start "$RDIR" | sed -n 's/^REDIS_URL=//p')
[[ -n $url ]] || die "redis-private.sh did not print REDIS_URL"
rcli() { redis-cli -u "$url" "$@"; }

# run_bg OUT ERR CMD...: run CMD (time-limited) with stdout to OUT and stderr to ERR; returns its
# exit status.
run_bg() {
    local out=$1 err=$2 rc=0
    shift 2
    timeout "$RUN_TIMEOUT_S" "$@" >"$out" 2>"$err" &
    child=$!
    wait "$child" || rc=$?
    child=""
    return "$rc"
}

# Redis server CPU (user + sys, seconds) so far.
redis_cpu() { rcli INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.6f", s }'; }

# Does `ferry bench` consume a queue filled by someone else (--queue Q --no-fill)? Then both
# sides process the very same Node-filled jobs. Otherwise ferry fills its own queue first.
ferry_prefilled=0
if "$FERRY" bench --help 2>&1 | grep -q -- '--no-fill' && "$FERRY" bench --help 2>&1 | grep -q -- '--queue'; then
    ferry_prefilled=1
fi
# Keep added jobs (run.sh flushes) so the Redis CPU measured around an add run is adding only.
ferry_keep=()
"$FERRY" bench --help 2>&1 | grep -q -- '--keep' && ferry_keep=(--keep)

# One run: impl scenario round mode jobs concurrency. Appends a JSON line to $RESULTS.
# Redis CPU per job: measured here around the run; for `process` runs the tools' own figure
# (INFO cpu around the timed phase, both tools do it) is used, since a run also fills the
# queue first (ferry) or connects a worker to a large queue.
run_one() {
    local impl=$1 scen=$2 round=$3 mode=$4 jobs=$5 conc=$6 out before after rc=0 extra=() warm
    warm=$(warmup_for "$mode" "$jobs")
    rcli FLUSHALL >/dev/null
    [[ $mode == latency ]] && extra=(--rate "$LATENCY_RATE")
    [[ $impl == ferry && ($mode == add || $mode == addbulk) ]] && extra+=("${ferry_keep[@]}")
    if [[ $mode == process ]] && { [[ $impl == node ]] || ((ferry_prefilled)); }; then
        run_bg "$TMP/out" "$TMP/err" node "$NODE_BENCH" --mode fill --jobs "$jobs" --warmup "$warm" --payload "$PAYLOAD" \
            --queue "$QUEUE" --redis "$url" || die "filling the queue failed: $(tail -n 3 "$TMP/err")"
        extra+=(--queue "$QUEUE" --no-fill)
    fi
    before=$(redis_cpu)
    if [[ $impl == node ]]; then
        run_bg "$TMP/out" "$TMP/err" node "$NODE_BENCH" --mode "$mode" --jobs "$jobs" --warmup "$warm" \
            --concurrency "$conc" --payload "$PAYLOAD" --redis "$url" "${extra[@]}" || rc=$?
    else
        run_bg "$TMP/out" "$TMP/err" "$FERRY" bench --mode "$mode" --jobs "$jobs" --warmup "$warm" \
            --concurrency "$conc" --payload "$PAYLOAD" --json --redis "$url" "${extra[@]}" || rc=$?
    fi
    after=$(redis_cpu)
    out=$(cat "$TMP/out")
    if ((rc != 0)) || ! jq -e 'type == "object" and (.jobs_per_s | type == "number")' <<<"$out" >/dev/null 2>&1; then
        msg "$impl $scen round $round failed (exit $rc): $(tail -n 3 "$TMP/err" | tr '\n' ' ')"
        jq -nc --arg impl "$impl" --arg scen "$scen" --argjson round "$round" \
            '{impl: $impl, scenario: $scen, round: $round, error: true}' >>"$RESULTS"
        return 0
    fi
    # Latency keys: the contract says p50_ms/p99_ms/max_ms; accept latency_p50_ms etc. too.
    # The outer Redis figure covers the warm-up too, which is the same Redis work per job.
    jq -c --arg impl "$impl" --arg scen "$scen" --arg mode "$mode" --argjson round "$round" --argjson jobs "$jobs" \
        --argjson warm "$warm" --argjson before "$before" --argjson after "$after" \
        '(($after - $before) * 1000000 / ($jobs + $warm)) as $outer
         | (if (.redis_cpu_us_per_job | type) == "number" then .redis_cpu_us_per_job else null end) as $tool
         | {impl: $impl, scenario: $scen, round: $round,
            jobs_per_s: .jobs_per_s, client_cpu_us_per_job: .client_cpu_us_per_job,
            redis_cpu_us_per_job: (if $mode == "process" and $tool != null then $tool else $outer end),
            redis_cpu_source: (if $mode == "process" and $tool != null then "tool" else "run.sh" end),
            redis_cpu_outer_us_per_job: $outer, redis_cpu_tool_us_per_job: $tool,
            p50_ms: (.p50_ms // .latency_p50_ms), p99_ms: (.p99_ms // .latency_p99_ms),
            max_ms: (.max_ms // .latency_max_ms), raw: .}' <<<"$out" >>"$RESULTS"
    jq -r 'def r1: if type == "number" then (. * 10 | round / 10) else "?" end;
        "bench: \(.impl) \(.scenario) round \(.round): \(.jobs_per_s | round) jobs/s, client \(.client_cpu_us_per_job | r1) us/job, redis \(.redis_cpu_us_per_job | r1) us/job"
        + (if .p50_ms then ", p50 \(.p50_ms | r1) ms p99 \(.p99_ms | r1) ms" else "" end)' \
        <<<"$(tail -n 1 "$RESULTS")" >&2
}

: >"$RESULTS"
started=$(date +%s)
msg "redis $url, rounds $ROUNDS, payload $PAYLOAD B, ferry $FERRY (prefilled process runs: $ferry_prefilled)"
for ((round = 1; round <= ROUNDS; round++)); do
    for s in "${SCENARIOS[@]}"; do
        read -r scen mode jobs conc <<<"$s"
        if [[ -n $ONLY && " $ONLY " != *" $scen "* ]]; then continue; fi
        if [[ -n ${BENCH_JOBS:-} ]]; then
            if [[ $mode == latency ]]; then ((BENCH_JOBS < jobs)) && jobs=$BENCH_JOBS; else jobs=$BENCH_JOBS; fi
        fi
        # A B B A ...: a steady drift of the box's speed favours neither side
        if ((round % 2)); then order=(node ferry); else order=(ferry node); fi
        for impl in "${order[@]}"; do run_one "$impl" "$scen" "$round" "$mode" "$jobs" "$conc"; done
    done
done
elapsed=$(($(date +%s) - started))

meta=$(jq -nc --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg host "$(uname -n)" --arg cores "$(nproc)" \
    --arg redis "$(rcli INFO server | tr -d '\r' | sed -n 's/^redis_version://p')" \
    --arg node "$(node --version)" --arg ferry "${bench_ferry_version:-unknown}${bench_ferry_build:+ ($bench_ferry_build)}" \
    --arg bullmq "$(node -p 'require("bullmq/package.json").version')" \
    --argjson rounds "$ROUNDS" --argjson payload "$PAYLOAD" --argjson elapsed "$elapsed" \
    --argjson rate "$LATENCY_RATE" --argjson prefilled "$ferry_prefilled" \
    '{date: $date, host: $host, cores: $cores, redis: $redis, node: $node, ferry: $ferry, bullmq: $bullmq,
      rounds: $rounds, payload: $payload, elapsed_s: $elapsed, latency_rate: $rate, ferry_prefilled: ($prefilled == 1)}')
node "$SRC/bench/node/report.js" "$RESULTS" "$meta" >"$REPORT"
cat "$REPORT"
msg "table written to $REPORT (raw runs: $RESULTS); took ${elapsed}s"
failed_runs=$(jq -s '[.[] | select(.error)] | length' "$RESULTS")
if ((failed_runs > 0)); then
    total_runs=$(jq -s 'length' "$RESULTS")
    die "$failed_runs of $total_runs runs failed (see the notes under the table and the messages above)"
fi
