#!/usr/bin/env bash
# check.sh BUILD_DIR - executes docs/runbook.md (CTest integration.runbook, fixture `servers`).
#
# The runbook's fenced blocks are of two kinds: "```sh run=STEP" (runnable: run here, as
# written) and "```text" (sample output: not run). Any other fence fails the check, as does a
# `## ` section without a runnable block, a step run twice or never, and a runbook anchor of
# deploy/prometheus/ferry-rules.yml that no heading makes. For every section this script builds
# the situation it describes on the fixture's Redis and PostgreSQL (failed jobs, dead letters,
# a stuck outbox, a poison message, a backlog, Redis stopped, a worker killed mid-job; for
# PostgreSQL down a private cluster of its own, so the fixture's keeps running), runs the
# section's blocks in order with bash -euo pipefail and the runbook's variables set, and checks
# their effect in Redis and PostgreSQL and their output. A block that uses a command this build
# does not have (`ferry trace`, `ferry queue retry --reason-contains`) is not run and fails
# the check at the end, naming it. Own key prefix (rbk), own database (ferry_runbook); the
# Redis server it stops is started again, whatever happens. Exit 0 when all pass, 1 otherwise.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=${FERRY_SOURCE_DIR:-$(cd -- "$here/../.." && pwd)}
build=$(cd -- "${1:?usage: check.sh BUILD_DIR}" && pwd)
ferry=${FERRY_BIN:-$build/ferry}
runbook=$root/docs/runbook.md
rules=$root/deploy/prometheus/ferry-rules.yml
testenv=${FERRY_TESTENV:?FERRY_TESTENV names the servers fixture directory}

fail() {
    echo "runbook check: FAIL: $*" >&2
    exit 1
}
note() { echo "runbook check: $*"; }

for t in redis-cli psql pg_isready curl jq awk sed timeout runuser; do
    command -v "$t" >/dev/null 2>&1 || fail "missing tool $t (scripts/install-deps.sh)"
done
[[ -x $ferry ]] || fail "no $ferry (build the ferry_cli target)"
[[ -r $testenv/env ]] || fail "no $testenv/env: run with the servers fixture"
envval() { sed -n "s/^$1=//p" "$testenv/env"; }
fixture_redis=$(envval REDIS_URL)
fixture_db=$(envval DATABASE_URL)
redis_ctl=$(envval REDIS_CTL)
[[ -n $fixture_redis && -n $fixture_db && -x $redis_ctl ]] ||
    fail "$testenv/env lacks REDIS_URL, DATABASE_URL or REDIS_CTL"

tmp=$(mktemp -d /tmp/ferry-runbook-XXXXXX)
blocks=$tmp/blocks out=$tmp/out work=$tmp/work logs=$tmp/logs
mkdir -p "$blocks" "$out" "$work" "$logs" "$tmp/bin"
ln -s "$ferry" "$tmp/bin/ferry"
PREFIX=rbk
DB_NAME=ferry_runbook
main_db=${fixture_db%/*}/$DB_NAME
redis_stopped=0
pg_top='' pg_dir='' pg_bindir='' pg_port=''
declare -A PIDS=()

rcli() { timeout 10 redis-cli -u "$fixture_redis" --no-auth-warning "$@"; }
sql() { psql -X -q -At -v ON_ERROR_STOP=1 "${SQL_DB:-$main_db}" -c "$1"; }
delete_keys() {
    rcli --scan --pattern "$PREFIX:*" | while IFS= read -r k; do rcli del "$k" >/dev/null; done
}

cleanup() {
    local n
    set +e
    for n in "${!PIDS[@]}"; do kill -TERM "${PIDS[$n]}" 2>/dev/null; done
    for n in "${!PIDS[@]}"; do wait "${PIDS[$n]}" 2>/dev/null; done
    ((redis_stopped == 0)) || "$redis_ctl" start >/dev/null 2>&1
    if [[ -n $pg_dir ]]; then
        FERRY_PROG="runbook check" ferry_pg_stop "$pg_dir" >/dev/null 2>&1
        rm -rf -- "$pg_top"
    fi
    delete_keys >/dev/null 2>&1
    psql -X -q "$fixture_db" -c "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null 2>&1
    if [[ -n ${KEEP_RUNBOOK_TMP:-} ]]; then echo "runbook check: kept $tmp" >&2; else rm -rf -- "$tmp"; fi
}
trap cleanup EXIT

# --- the runbook's blocks ------------------------------------------------------------------

# One line per section (S anchor), runnable block (B anchor step line) and error (E line what);
# each runnable block's text goes to $blocks/<anchor>.<step>.sh.
awk -v dir="$blocks" -v list="$tmp/list" '
function anchor(h) { h = tolower(h); gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); return h }
inb == 0 && /^## / { sec = anchor(substr($0, 4)); print "S", sec > list; next }
inb == 0 && /^```/ {
    info = substr($0, 4); inb = 1; start = NR; runnable = 0
    if (info ~ /^sh run=[a-z0-9-]+$/) {
        if (sec == "") { print "E", NR, "runnable block outside a ## section" > list; next }
        step = substr(info, 8); runnable = 1; file = dir "/" sec "." step ".sh"
        print "B", sec, step, NR > list; printf "" > file
    } else if (info != "text") {
        print "E", NR, "fence \"" $0 "\" (use ```sh run=STEP or ```text)" > list
    }
    next
}
inb == 1 && /^```/ { inb = 0; if (runnable) close(file); next }
inb == 1 && runnable { print > file; next }
inb == 0 && /^[ \t]+```/ { print "E", NR, "indented fence" > list }
END { if (inb) print "E", start, "fence never closed" > list }
' "$runbook"

declare -A SECTION_BLOCKS=() STEP_STATE=() SEEN_SECTION=()
sections=()
while read -r kind a b c; do
    case $kind in
        S)
            [[ -z ${SEEN_SECTION[$a]:-} ]] || fail "docs/runbook.md: two sections make the anchor #$a"
            SEEN_SECTION[$a]=1
            sections+=("$a")
            SECTION_BLOCKS[$a]=0
            ;;
        B)
            [[ -z ${STEP_STATE[$a.$b]:-} ]] || fail "docs/runbook.md:$c: step $b twice in ## $a"
            STEP_STATE[$a.$b]=pending
            SECTION_BLOCKS[$a]=$((SECTION_BLOCKS[$a] + 1))
            ;;
        E) fail "docs/runbook.md:$a: $b $c" ;;
    esac
done <"$tmp/list"
for s in "${sections[@]}"; do
    ((SECTION_BLOCKS[$s] > 0)) || fail "docs/runbook.md: section #$s has no runnable block"
done

# Every runbook_url of the alert rules names a section, and the section names its alerts.
required=(retry replay)
while read -r alert anchor; do
    [[ -n ${SEEN_SECTION[$anchor]:-} ]] ||
        fail "$alert links to docs/runbook.md#$anchor, which no ## heading makes"
    awk -v want="$anchor" '
        function anchor(h) { h = tolower(h); gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); return h }
        /^## / { sec = anchor(substr($0, 4)); next }
        sec == want { print }' "$runbook" | grep -qF "$alert" ||
        fail "section #$anchor of docs/runbook.md does not name the alert $alert that links to it"
    required+=("$anchor")
done < <(awk '$1 == "-" && $2 == "alert:" { a = $3 }
              $1 == "runbook_url:" { u = $2; gsub(/"/, "", u); sub(/^docs\/runbook\.md#/, "", u); print a, u }' "$rules")
for a in "${required[@]}"; do
    [[ -n ${SEEN_SECTION[$a]:-} ]] || fail "docs/runbook.md has no section #$a"
done
note "${#sections[@]} sections, ${#STEP_STATE[@]} runnable blocks; every alert's anchor exists"

# Commands being added in parallel: a block that uses one this build lacks is not run, and the
# check fails at the end.
missing=()
have_trace=1 have_selector=1
"$ferry" trace --help >/dev/null 2>&1 || have_trace=0
"$ferry" queue retry --help 2>/dev/null | grep -q -- '--reason-contains' || have_selector=0

# run_step SECTION STEP: run the block with the current variables; stdout and stderr in
# $out/SECTION.STEP.{out,err}. Returns 1 (without failing) only when the block needs a
# command this build lacks.
run_step() {
    local sec=$1 step=$2 f=$blocks/$1.$2.sh rc=0
    [[ -n ${STEP_STATE[$sec.$step]:-} ]] ||
        fail "docs/runbook.md has no block \`\`\`sh run=$step in section #$sec"
    [[ ${STEP_STATE[$sec.$step]} == pending ]] || fail "step $sec/$step run twice"
    if ((have_trace == 0)) && grep -q 'ferry trace' "$f"; then
        missing+=("#$sec run=$step: \`ferry trace\` does not exist in this build")
        STEP_STATE[$sec.$step]=missing
        return 1
    fi
    if ((have_selector == 0)) && grep -q -- '--reason-contains' "$f"; then
        missing+=("#$sec run=$step: \`ferry queue retry --reason-contains\` does not exist in this build")
        STEP_STATE[$sec.$step]=missing
        return 1
    fi
    (cd "$work" && PATH="$tmp/bin:$PATH" timeout 90 bash -euo pipefail "$f") \
        >"$out/$sec.$step.out" 2>"$out/$sec.$step.err" || rc=$?
    if ((rc != 0)); then
        {
            echo "--- block #$sec run=$step (exit $rc):"
            cat "$f"
            echo "--- stdout:"
            cat "$out/$sec.$step.out"
            echo "--- stderr:"
            cat "$out/$sec.$step.err"
        } >&2
        fail "block #$sec run=$step failed"
    fi
    if grep -E 'AddressSanitizer|LeakSanitizer|runtime error:' "$out/$sec.$step.err" >&2; then
        fail "block #$sec run=$step: sanitizer report"
    fi
    STEP_STATE[$sec.$step]=ran
    note "#$sec run=$step ok"
}

# expect_out SECTION STEP ERE [what]: the block's stdout matches ERE.
expect_out() {
    grep -qE -- "$3" "$out/$1.$2.out" || {
        cat "$out/$1.$2.out" >&2
        fail "#$1 run=$2: output does not match /$3/${4:+ ($4)}"
    }
}
# first_json SECTION STEP KEY: KEY of the JSON object on the block's first output line.
first_json() { head -1 "$out/$1.$2.out" | jq -r ".$3"; }
expect_eq() { [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"; }

# wait_until WHAT CMD...: poll CMD (every 0.1 s, at most 20 s) until it succeeds.
wait_until() {
    local what=$1 i
    shift
    for ((i = 0; i < 200; i++)); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    fail "timed out waiting for $what"
}

fq() { "$ferry" "$@"; }
job_state() { fq job show "$1" "$2" --json 2>/dev/null | jq -r .state; }
job_field() { fq job show "$1" "$2" --json | jq -r "$3"; }
count_of() { fq queue counts "$1" --json | jq -r ".\"$2\""; }
state_is() { [[ $(job_state "$1" "$2") == "$3" ]]; }
add_job() { fq queue add "$@"; }

# start_bg NAME LOG CMD...: a background process, stopped by stop_bg or at exit.
start_bg() {
    local name=$1 log=$2
    shift 2
    "$@" >"$log" 2>&1 &
    PIDS[$name]=$!
}
stop_bg() {
    local name=$1 rc=0
    [[ -n ${PIDS[$name]:-} ]] || return 0
    kill -TERM "${PIDS[$name]}" 2>/dev/null || true
    wait "${PIDS[$name]}" || rc=$?
    unset "PIDS[$name]"
    ((rc == 0)) || { cat "$logs/$name.log" >&2; fail "$name: SIGTERM gave exit $rc"; }
    if grep -E 'AddressSanitizer|LeakSanitizer|runtime error:' "$logs/$name.log" >&2; then
        fail "$name: sanitizer report"
    fi
}
# addr_of LOG ERE: the first match of ERE in LOG (polled, at most 20 s).
addr_of() {
    local i a
    for ((i = 0; i < 200; i++)); do
        a=$(grep -oE "$2" "$1" | head -1 || true)
        if [[ -n $a ]]; then echo "$a"; return 0; fi
        sleep 0.1
    done
    cat "$1" >&2
    fail "no address in $(basename "$1")"
}

# The worker unit of deploy/systemd as systemd would run it: FERRY_WORKER_OPTS and
# FERRY_WORKER_COMMAND from the settings file $WORKER_ENV (split on blanks), plus EXTRA.
start_unit_worker() {
    local name=$1 queue=$2 envfile=$3 opts cmd
    shift 3
    opts=$(sed -n 's/^FERRY_WORKER_OPTS=//p' "$envfile" | tail -1)
    cmd=$(sed -n 's/^FERRY_WORKER_COMMAND=//p' "$envfile" | tail -1)
    local -a o
    read -r -a o <<<"$opts"
    start_bg "$name" "$logs/$name.log" "$ferry" worker --metrics-listen 127.0.0.1:0 \
        --shutdown-timeout 30000 "${o[@]}" "$@" "$queue" -- "$cmd"
}
worker_env() {
    printf 'FERRY_WORKER_COMMAND=%s\nFERRY_METRICS_LISTEN=127.0.0.1:0\nFERRY_WORKER_OPTS=--concurrency 1\n' \
        "$here/handler.sh" >"$1"
}

# The relay unit: routes $ROUTES, FERRY_RELAY_OPTS from $RELAY_ENV; short backoffs for a test.
start_relay() {
    local opts
    opts=$(sed -n 's/^FERRY_RELAY_OPTS=//p' "$RELAY_ENV" | tail -1)
    local -a o
    read -r -a o <<<"$opts"
    : >"$logs/relay.log"
    start_bg relay "$logs/relay.log" "$ferry" relay --routes "$ROUTES" --metrics-listen 127.0.0.1:0 \
        --max-backoff 1000 --poll-interval 200 --unknown-report 1000 "${o[@]}"
    RELAY_METRICS=$(addr_of "$logs/relay.log" 'http://127\.0\.0\.1:[0-9]+/metrics')
    export RELAY_METRICS
}

start_serve() {
    local name=$1
    shift
    : >"$logs/$name.log"
    start_bg "$name" "$logs/$name.log" "$ferry" serve --listen 127.0.0.1:0 --token-file "$tmp/tokens" \
        --routes "$ROUTES" --timeout 1000 --db-timeout 2000 "$@"
    FERRY=$(addr_of "$logs/$name.log" 'listening on http://127\.0\.0\.1:[0-9]+')
    FERRY=${FERRY#listening on }
    export FERRY
}

# --- the environment the blocks see --------------------------------------------------------

delete_keys
PGOPTIONS='-c client_min_messages=warning' psql -X -q -v ON_ERROR_STOP=1 "$fixture_db" \
    -c "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" \
    -c "CREATE DATABASE $DB_NAME" >/dev/null || fail "cannot create database $DB_NAME"
export REDIS_URL=$fixture_redis DATABASE_URL=$main_db FERRY_PREFIX=$PREFIX
unset FERRY_TOKEN QUEUE NAME JOB_ID REASON EVENT_ID CONSUMER DL_ID
"$ferry" migrate >"$logs/migrate.log" 2>&1 || { cat "$logs/migrate.log" >&2; fail "ferry migrate"; }
export ACTOR=runbook-oncall
export ROUTES=$tmp/routes RELAY_ENV=$tmp/relay.env HANDLER=$here/handler.sh
export RUNBOOK_SLEEP_FLAG=$tmp/sleep-flag
printf '%s\n' '# topic  targets' 'rb.replayed rb-replay:capture' 'rb.placed rb-outbox:capture' >"$ROUTES"
echo 'FERRY_RELAY_OPTS=--max-envelope 1024' >"$RELAY_ENV"
FERRY_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
(umask 077 && echo "runbook read,act,redrive $FERRY_TOKEN" >"$tmp/tokens")
export FERRY_TOKEN
start_serve serve
start_relay

# --- retry ---------------------------------------------------------------------------------
export QUEUE=rb-retry NAME=capture REASON=timeout
add_job "$QUEUE" capture '{"k":"timeout"}' >/dev/null # 1
add_job "$QUEUE" capture '{"k":"timeout"}' >/dev/null # 2
add_job "$QUEUE" refund '{"k":"declined"}' >/dev/null # 3
add_job "$QUEUE" capture '{"k":"declined"}' >/dev/null # 4
fq worker "$QUEUE" --max-jobs 4 --no-dead-letters -- "$HANDLER" >"$logs/w-retry.log" 2>&1 ||
    { cat "$logs/w-retry.log" >&2; fail "retry: worker"; }
expect_eq "retry: failed jobs" "$(count_of "$QUEUE" failed)" 4
export JOB_ID=3
run_step retry diagnose
expect_out retry diagnose 'failed +4'
expect_out retry diagnose 'reason: gateway timeout'
expect_out retry diagnose 'failedReason +card declined'
run_step retry one
expect_eq "retry one: job 3" "$(job_state "$QUEUE" 3)" waiting
expect_eq "retry one: job 3 attempts after --reset-attempts" "$(job_field "$QUEUE" 3 .attemptsMade)" 0
expect_eq "retry one: job 1 untouched" "$(job_state "$QUEUE" 1)" failed
if run_step retry selector; then
    expect_out retry selector '2 failed jobs retried'
    expect_eq "retry selector: job 1 (capture, timeout)" "$(job_state "$QUEUE" 1)" waiting
    expect_eq "retry selector: job 2 (capture, timeout)" "$(job_state "$QUEUE" 2)" waiting
    expect_eq "retry selector: job 4 (capture, declined) stays" "$(job_state "$QUEUE" 4)" failed
fi
run_step retry all
for j in 1 2 4; do expect_eq "retry all: job $j" "$(job_state "$QUEUE" "$j")" waiting; done
run_step retry verify
expect_eq "retry verify: failed count" "$(first_json retry verify failed)" 0

# --- dead letters --------------------------------------------------------------------------
export QUEUE=rb-dlq NAME=capture REASON=timeout
add_job "$QUEUE" capture '{"k":"timeout"}' >/dev/null
add_job "$QUEUE" capture '{"k":"timeout"}' >/dev/null
add_job "$QUEUE" capture '{"k":"declined"}' >/dev/null
add_job "$QUEUE" refund '{"k":"timeout"}' >/dev/null
fq worker "$QUEUE" --max-jobs 4 -- "$HANDLER" >"$logs/w-dlq.log" 2>&1 ||
    { cat "$logs/w-dlq.log" >&2; fail "dead letters: worker"; }
# one more failure no recorder saw (a worker without a database): only `dlq sync` finds it
unrecorded=$(add_job "$QUEUE" capture '{"k":"timeout"}')
fq worker "$QUEUE" --max-jobs 1 --no-dead-letters -- "$HANDLER" >"$logs/w-dlq2.log" 2>&1 ||
    { cat "$logs/w-dlq2.log" >&2; fail "dead letters: second worker"; }
expect_eq "dead letters: rows recorded by the worker" \
    "$(sql "SELECT count(*) FROM dead_letters WHERE prefix = '$PREFIX' AND queue = '$QUEUE'")" 4
DL_ID=$(sql "SELECT id FROM dead_letters WHERE queue = '$QUEUE' AND job_name = 'capture' ORDER BY failed_at LIMIT 1")
export DL_ID
run_step dead-letters list
expect_out dead-letters list "$DL_ID"
expect_out dead-letters list 'gateway timeout'
expect_out dead-letters list '^id: +'"$DL_ID"
run_step dead-letters sync
expect_out dead-letters sync 'recorded 1'
expect_eq "dead letters: the unrecorded failure after sync" \
    "$(sql "SELECT recorded_by FROM dead_letters WHERE queue = '$QUEUE' AND job_id = '$unrecorded'")" sync
run_step dead-letters dry-run
expect_eq "dead letters dry run: 'would redrive' lines" \
    "$(grep -c '^would redrive' "$out/dead-letters.dry-run.out")" 3
expect_eq "dead letters dry run: rows changed" \
    "$(sql "SELECT count(*) FROM dead_letters WHERE queue = '$QUEUE' AND redrive_count > 0")" 0
expect_eq "dead letters dry run: jobs added" "$(rcli --scan --pattern "$PREFIX:$QUEUE:dlq-*" | wc -l)" 0
run_step dead-letters execute
redriven=$(sql "SELECT id FROM dead_letters WHERE queue = '$QUEUE' AND redrive_count = 1 AND redriven_by = '$ACTOR' ORDER BY id")
expect_eq "dead letters execute: rows redriven by $ACTOR" "$(wc -w <<<"$redriven")" 3
for id in $redriven; do
    expect_eq "dead letters execute: job dlq-$id-1" "$(job_state "$QUEUE" "dlq-$id-1")" waiting
done
expect_eq "dead letters execute: rows left alone (declined, refund)" \
    "$(sql "SELECT count(*) FROM dead_letters WHERE queue = '$QUEUE' AND redrive_count = 0")" 2
run_step dead-letters audit
expect_out dead-letters audit "$ACTOR"
jq -e --arg a "$ACTOR" '.audit | map(select(.actor == $a and .action == "redrive" and .dryRun == false)) | length == 3' \
    < <(sed -n '/^{/,$p' "$out/dead-letters.audit.out") >/dev/null ||
    fail "dead letters audit: the API's audit does not list the 3 redrives by $ACTOR"
run_step dead-letters verify
expect_out dead-letters verify '^ferry_dead_letters 2$' "the gauge counts the 2 rows not redriven"
run_step dead-letters purge
expect_eq "dead letters purge (dry run): rows" \
    "$(sql "SELECT count(*) FROM dead_letters WHERE queue = '$QUEUE'")" 5

# --- replay --------------------------------------------------------------------------------
export QUEUE=rb-replay CONSUMER=rb-consumer
EVENT_ID=$(sql "INSERT INTO outbox_events (id, topic, aggregate_id, payload) VALUES (gen_random_uuid(), 'rb.replayed', gen_random_uuid(), '{\"k\":\"fine\"}') RETURNING id")
export EVENT_ID
wait_until "the relay to publish $EVENT_ID" state_is "$QUEUE" "$EVENT_ID" waiting
fq worker "$QUEUE" --max-jobs 1 -- "$HANDLER" >"$logs/w-replay.log" 2>&1 || fail "replay: worker"
expect_eq "replay: job" "$(job_state "$QUEUE" "$EVENT_ID")" completed
sql "INSERT INTO processed_messages (consumer, message_id) VALUES ('$CONSUMER', '$EVENT_ID')" >/dev/null
if run_step replay trace; then
    expect_out replay trace "$QUEUE"
    expect_out replay trace "$CONSUMER"
    expect_out replay trace 'completed'
fi
run_step replay find
expect_out replay find "$EVENT_ID"
expect_out replay find 'state +completed'
run_step replay rerun
expect_eq "replay rerun: job" "$(job_state "$QUEUE" "$EVENT_ID")" waiting
run_step replay inbox
expect_eq "replay inbox: markers left" \
    "$(sql "SELECT count(*) FROM processed_messages WHERE consumer = '$CONSUMER'")" 0
# the job runs again and is then removed (as removeOnComplete would): the situation republish is for
fq worker "$QUEUE" --max-jobs 1 -- "$HANDLER" >"$logs/w-replay2.log" 2>&1 || fail "replay: worker 2"
fq job remove "$QUEUE" "$EVENT_ID" >/dev/null
run_step replay republish
expect_out replay republish "$EVENT_ID"
wait_until "the relay to publish $EVENT_ID again" state_is "$QUEUE" "$EVENT_ID" waiting
expect_eq "replay republish: the job's eventId" "$(job_field "$QUEUE" "$EVENT_ID" .data.eventId)" "$EVENT_ID"
run_step replay verify
expect_out replay verify 'state +waiting'
expect_out replay verify '\| t$'

# --- stuck outbox --------------------------------------------------------------------------
export QUEUE=rb-outbox
small=$(sql "INSERT INTO outbox_events (id, topic, aggregate_id, payload) VALUES (gen_random_uuid(), 'rb.placed', gen_random_uuid(), '{\"k\":\"fine\"}') RETURNING id")
big=$(sql "INSERT INTO outbox_events (id, topic, aggregate_id, payload) VALUES (gen_random_uuid(), 'rb.placed', gen_random_uuid(), jsonb_build_object('k', repeat('x', 3000))) RETURNING id")
unrouted=$(sql "INSERT INTO outbox_events (id, topic, aggregate_id, payload) VALUES (gen_random_uuid(), 'order.refunded', gen_random_uuid(), '{\"k\":\"fine\"}') RETURNING id")
wait_until "the relay to publish the small row" state_is "$QUEUE" "$small" waiting
quarantined() { [[ $(sql "SELECT quarantined_at IS NOT NULL FROM outbox_events WHERE id = '$big'") == t ]]; }
wait_until "the relay to set the big row aside" quarantined
run_step stuck-outbox diagnose
expect_out stuck-outbox diagnose '^unpublished: +2 '
expect_out stuck-outbox diagnose '^quarantined: +1$'
expect_out stuck-outbox diagnose '^order\.refunded .* NO$'
expect_out stuck-outbox diagnose '^ferry_outbox_unpublished 2$'
expect_out stuck-outbox diagnose '^ferry_relay_last_success_timestamp_seconds [0-9]'
run_step stuck-outbox rows
expect_out stuck-outbox rows "$big"
expect_out stuck-outbox rows "over the relay's limit of 1024"
run_step stuck-outbox fix-routes
expect_out stuck-outbox fix-routes '^order\.refunded .* yes$'
run_step stuck-outbox fix-quarantine
expect_out stuck-outbox fix-quarantine "$big"
grep -qx 'FERRY_RELAY_OPTS=--max-envelope 8388608' "$RELAY_ENV" || fail "fix-quarantine: $RELAY_ENV"
# `systemctl restart ferry-relay`
stop_bg relay
start_relay
wait_until "the relay to publish the unquarantined row" state_is "$QUEUE" "$big" waiting
wait_until "the relay to publish the newly routed row" state_is payments "$unrouted" waiting
expect_eq "stuck outbox: the routed job's name" "$(job_field payments "$unrouted" .name)" refund
run_step stuck-outbox verify
expect_eq "stuck outbox verify: unpublished" "$(first_json stuck-outbox verify unpublished)" 0
expect_eq "stuck outbox verify: quarantined" "$(first_json stuck-outbox verify quarantined)" 0
expect_out stuck-outbox verify '^ferry_relay_published_total [1-9]'

# --- poison messages -----------------------------------------------------------------------
export QUEUE=rb-poison NAME=poison WORKER_ENV=$tmp/worker-rb-poison.env
worker_env "$WORKER_ENV"
JOB_ID=$(add_job "$QUEUE" poison '{"k":"transient","order":"o-17"}' \
    --opts '{"attempts":1000,"backoff":{"type":"fixed","delay":1500}}')
export JOB_ID
start_unit_worker w-poison "$QUEUE" "$WORKER_ENV"
retried_twice() {
    [[ $(job_field "$QUEUE" "$JOB_ID" .attemptsMade) -ge 2 && $(job_state "$QUEUE" "$JOB_ID") == delayed ]]
}
wait_until "the poison job to fail twice" retried_twice
stop_bg w-poison
run_step poison-messages find
expect_out poison-messages find "^$JOB_ID +poison +attempts [2-9]"
expect_out poison-messages find "^$JOB_ID +poison +delayed"
expect_out poison-messages find "^[0-9]+-[0-9]+ delayed jobId=$JOB_ID delay="
run_step poison-messages look
expect_out poison-messages look 'failedReason +upstream unavailable'
run_step poison-messages remove
expect_eq "poison remove: the copy's data" "$(jq -r .data.order "$work/poison-$QUEUE-$JOB_ID.json")" o-17
fq job show "$QUEUE" "$JOB_ID" >/dev/null 2>&1 && fail "poison remove: job $JOB_ID is still there"
run_step poison-messages bound
# `systemctl restart ferry-worker@rb-poison`: the worker takes the settings (exits when idle)
start_unit_worker w-poison2 "$QUEUE" "$WORKER_ENV" --idle-exit 1000
wait "${PIDS[w-poison2]}" || { cat "$logs/w-poison2.log" >&2; fail "poison bound: worker refused $WORKER_ENV"; }
unset "PIDS[w-poison2]"
grep -q 'max-started-attempts' "$WORKER_ENV" || fail "poison bound: $WORKER_ENV"
run_step poison-messages verify
expect_out poison-messages verify "job $JOB_ID removed"
readded=$(tail -1 "$out/poison-messages.verify.out")
expect_eq "poison verify: the new job" "$(job_state "$QUEUE" "$readded")" waiting
expect_eq "poison verify: the new job's data" "$(job_field "$QUEUE" "$readded" .data.order)" o-17
expect_eq "poison verify: the new job's attempts" "$(job_field "$QUEUE" "$readded" .opts.attempts)" 3

# --- backlog age ---------------------------------------------------------------------------
export QUEUE=rb-backlog WORKER_ENV=$tmp/worker-rb-backlog.env
worker_env "$WORKER_ENV"
for i in $(seq 1 20); do echo "{\"name\":\"b\",\"data\":{\"i\":$i}}"; done |
    fq queue add-bulk "$QUEUE" >/dev/null
fq queue pause "$QUEUE"
fq queue concurrency "$QUEUE" 1
fq queue rate-limit "$QUEUE" 600000
run_step backlog-age diagnose
expect_out backlog-age diagnose 'PAUSED'
expect_out backlog-age diagnose 'global concurrency.* 1'
expect_out backlog-age diagnose "^ferry_queue_paused\\{queue=\"$QUEUE\"\\} 1$"
expect_out backlog-age diagnose "^ferry_queue_oldest_ready_age_seconds\\{queue=\"$QUEUE\"\\} "
run_step backlog-age fix-paused
expect_eq "backlog fix-paused: isPaused" "$(count_of "$QUEUE" isPaused)" false
run_step backlog-age fix-limits
expect_eq "backlog fix-limits: concurrency" "$(fq queue concurrency "$QUEUE" --json | jq -r .concurrency)" null
expect_eq "backlog fix-limits: limiter key" "$(rcli exists "$PREFIX:$QUEUE:limiter")" 0
run_step backlog-age scale-out
expect_eq "backlog scale-out: completed" "$(count_of "$QUEUE" completed)" 20
grep -qx 'FERRY_WORKER_OPTS=--concurrency 16' "$WORKER_ENV" || fail "backlog scale-out: $WORKER_ENV"
run_step backlog-age verify
expect_eq "backlog verify: waiting" "$(first_json backlog-age verify waiting)" 0
expect_out backlog-age verify "^ferry_queue_oldest_ready_age_seconds\\{queue=\"$QUEUE\"\\} 0(\\.0*)?$"

# --- redis down ----------------------------------------------------------------------------
export QUEUE=rb-redis
for i in 1 2 3; do add_job "$QUEUE" r "{\"i\":$i}" >/dev/null; done
"$redis_ctl" stop >/dev/null
redis_stopped=1
during=$(sql "INSERT INTO outbox_events (id, topic, aggregate_id, payload) VALUES (gen_random_uuid(), 'rb.placed', gen_random_uuid(), '{\"k\":\"fine\"}') RETURNING id")
failed_once() { [[ $(sql "SELECT attempts > 0 AND last_error IS NOT NULL FROM outbox_events WHERE id = '$during'") == t ]]; }
wait_until "the relay to record its failure on the row" failed_once
run_step redis-down diagnose
expect_out redis-down diagnose '^redis does not answer$'
expect_out redis-down diagnose '"status":"unready"'
expect_out redis-down diagnose '^ferry_serve_source_up\{source="redis"\} 0$'
expect_out redis-down diagnose '^with errors: +1$'
expect_out redis-down diagnose '^ferry cannot reach redis$'
"$redis_ctl" start >/dev/null
redis_stopped=0
published() { [[ $(sql "SELECT published_at IS NOT NULL FROM outbox_events WHERE id = '$during'") == t ]]; }
wait_until "the relay to publish the row after the outage" published
run_step redis-down verify
expect_out redis-down verify '^PONG$'
expect_out redis-down verify '^noeviction$'
expect_out redis-down verify '"status":"ready"'
expect_out redis-down verify 'waiting +3$'
expect_out redis-down verify '^unpublished: +0'
expect_eq "redis down: the row's job" "$(job_state rb-outbox "$during")" waiting

# --- postgres down (a private cluster: the fixture's keeps running) ------------------------
export QUEUE=rb-pg
# shellcheck source=../../scripts/lib.sh
FERRY_PROG="runbook check" . "$root/scripts/lib.sh"
pg_top=$(mktemp -d /tmp/ferry-runbook-pg.XXXXXX)
mkdir "$pg_top/pg"
pg_dir=$pg_top/pg
ferry_pg_start "$pg_dir" >"$logs/pg.log" 2>&1 || { cat "$logs/pg.log" >&2; fail "private PostgreSQL"; }
pg_port=$FERRY_PG_PORT
pg_real=$FERRY_PG_DIR
pg_bindir=$(ferry_pg_bindir)
export DATABASE_URL=postgresql://ferry@127.0.0.1:$pg_port/ferry
"$ferry" migrate >"$logs/migrate-pg.log" 2>&1 || { cat "$logs/migrate-pg.log" >&2; fail "migrate (private)"; }
main_ferry=$FERRY
start_serve serve-pg
start_bg w-pg "$logs/w-pg.log" "$ferry" worker "$QUEUE" -- "$HANDLER"
wait_until "the rb-pg worker to record its dead letters" grep -q 'final failures will be recorded' "$logs/w-pg.log"
ferry_pg_as_owner "$pg_bindir/pg_ctl" -D "$pg_real/data" -m fast -w stop >"$logs/pg-stop.log" 2>&1 ||
    { cat "$logs/pg-stop.log" >&2; fail "pg_ctl stop"; }
# queues and workers keep working: one job completes, one fails for good (not recordable now)
add_job "$QUEUE" capture '{"k":"fine"}' >/dev/null
pg_failed=$(add_job "$QUEUE" capture '{"k":"timeout"}')
done_both() { [[ $(count_of "$QUEUE" completed) == 1 && $(count_of "$QUEUE" failed) == 1 ]]; }
wait_until "the worker to finish both jobs while PostgreSQL is down" done_both
stop_bg w-pg # its recorder's held failure is missed: only `dlq sync` can record it now
run_step postgres-down diagnose
expect_out postgres-down diagnose '^postgresql does not answer$'
expect_out postgres-down diagnose '"postgres":\{"ok":false'
expect_out postgres-down diagnose '^ferry_serve_source_up\{source="outbox"\} 0$'
expect_out postgres-down diagnose '^ferry cannot reach postgresql$'
expect_out postgres-down diagnose 'failed +1$'
sockopt="-k $(ferry_sh_quote "$pg_real")"
((${#pg_real} + 16 <= FERRY_SUN_PATH_MAX)) || sockopt="-k ''"
ferry_pg_as_owner "$pg_bindir/pg_ctl" -D "$pg_real/data" -l "$pg_real/postgres.log" -w -t 30 \
    -o "-p $pg_port -c listen_addresses=127.0.0.1 $sockopt -c fsync=off" start >"$logs/pg-start.log" 2>&1 ||
    { cat "$logs/pg-start.log" >&2; fail "pg_ctl start"; }
run_step postgres-down verify
expect_out postgres-down verify 'accepting connections'
expect_out postgres-down verify '"status":"ready"'
expect_out postgres-down verify 'recorded 1'
expect_eq "postgres down: the failure recorded after the outage" \
    "$(SQL_DB=$DATABASE_URL sql "SELECT count(*) FROM dead_letters WHERE queue = '$QUEUE' AND job_id = '$pg_failed'")" 1
stop_bg serve-pg
export DATABASE_URL=$main_db FERRY=$main_ferry

# --- stalling worker -----------------------------------------------------------------------
export QUEUE=rb-stall WORKER_ENV=$tmp/worker-rb-stall.env
worker_env "$WORKER_ENV"
: >"$RUNBOOK_SLEEP_FLAG"
JOB_ID=$(add_job "$QUEUE" s '{"k":"sleep"}')
export JOB_ID
start_bg w-stall "$logs/w-stall.log" "$ferry" worker "$QUEUE" --lock-duration 1000 --stalled-interval 1000 --no-dead-letters -- "$HANDLER"
wait_until "the job to be active" state_is "$QUEUE" "$JOB_ID" active
{
    kill -KILL "${PIDS[w-stall]}"
    wait "${PIDS[w-stall]}" || true
} 2>/dev/null
unset "PIDS[w-stall]"
rm -f "$RUNBOOK_SLEEP_FLAG"
# another worker's stalled check recovers the job (a `stalled` event) and runs it
fq worker "$QUEUE" --stalled-interval 1000 --max-jobs 1 --no-dead-letters -- "$HANDLER" \
    >"$logs/w-stall2.log" 2>&1 || { cat "$logs/w-stall2.log" >&2; fail "stalling: recovering worker"; }
expect_eq "stalling: the recovered job" "$(job_state "$QUEUE" "$JOB_ID")" completed
run_step stalling-worker diagnose
expect_out stalling-worker diagnose " stalled jobId=$JOB_ID$"
expect_out stalling-worker diagnose '^stalledCounter +1$'
run_step stalling-worker fix
grep -q -- '--lock-duration 60000' "$WORKER_ENV" || fail "stalling fix: $WORKER_ENV"
# `systemctl restart ferry-worker@rb-stall`
start_unit_worker w-stall3 "$QUEUE" "$WORKER_ENV"
after=$(add_job "$QUEUE" s '{"k":"fine"}')
wait_until "the restarted worker to run a job" state_is "$QUEUE" "$after" completed
run_step stalling-worker verify
expect_out stalling-worker verify 'completed +2$'
awk 'NR == 1' "$out/stalling-worker.verify.out" | grep -qE '^[^ ]+ +id [0-9]+ +addr 127\.0\.0\.1:' ||
    fail "stalling verify: ferry queue workers lists no worker"
stop_bg w-stall3

# --- end -----------------------------------------------------------------------------------
stop_bg relay
stop_bg serve
for k in "${!STEP_STATE[@]}"; do
    [[ ${STEP_STATE[$k]} != pending ]] || fail "docs/runbook.md block ${k%%.*} run=${k#*.} is never run by $0"
done
if grep -lE 'AddressSanitizer|LeakSanitizer|runtime error:' "$logs"/*.log >&2; then
    fail "sanitizer report in the logs above"
fi
if ((${#missing[@]})); then
    printf 'runbook check: FAIL: %s\n' "${missing[@]}" >&2
    fail "${#missing[@]} block(s) not run: the commands they use are missing"
fi
note "all checks pass"
