#!/usr/bin/env bash
# demo.sh BUILD_DIR - `make demo`: the shop (examples/shop) and taskflow (examples/taskflow)
# under faults, ending in a reconciliation.
#
# Starts a private PostgreSQL and Redis, migrates, starts shop-fakes (gateway, carrier,
# mailer), shop-api, taskflow-api, taskflow-worker and two shop-worker processes (each with
# its relay), places DEMO_ORDERS orders from concurrent clients (cancelling some), assigns
# tasks, injects poison events, turns the providers' faults on, SIGKILLs a shop-worker every
# DEMO_KILL_EVERY seconds and restarts it, waits until the outbox and the queues drain, then
# prints the reconciliation (shop-demo reconcile) and exits with its status: 0 only when
# nothing was lost and nothing happened twice.
#
# Environment: DEMO_ORDERS (1000), DEMO_CLIENTS (16), DEMO_TASKS (DEMO_ORDERS / 10),
# DEMO_KILL_EVERY (seconds between kills, 3), DEMO_RELAY_CRASH (the chance that a relay exits
# right after publishing a batch and before marking it, 0.03), DEMO_CHAOS_S (how long the
# kills go on at most, from the first order: 30; they stop earlier once everything drained),
# DEMO_SHIPPING_RATE (shipments per second across the queue, 60: the shop's own default is
# 4/s, which would make 1,000 shipments take over four minutes), DEMO_FAULTS (1 = providers'
# faults on), DEMO_SEED (random), DEMO_KEEP=1 keeps the run's directory (logs,
# acknowledgements) for a look afterwards.
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

orders=${DEMO_ORDERS:-1000}
clients=${DEMO_CLIENTS:-16}
tasks=${DEMO_TASKS:-default}
kill_every=${DEMO_KILL_EVERY:-3}
relay_crash=${DEMO_RELAY_CRASH:-0.03}
chaos_s=${DEMO_CHAOS_S:-30}
shipping_rate=${DEMO_SHIPPING_RATE:-60}
faults=${DEMO_FAULTS:-1}
seed=${DEMO_SEED:-$RANDOM$RANDOM}
[[ $orders =~ ^[0-9]+$ && $tasks == default ]] && tasks=$((orders / 10))
for v in orders clients tasks kill_every chaos_s shipping_rate faults seed; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "demo: DEMO_${v^^} must be a whole number (got '${!v}')" >&2; exit 2; }
done
[[ $relay_crash =~ ^(0(\.[0-9]+)?|1(\.0+)?)$ ]] ||
  { echo "demo: DEMO_RELAY_CRASH must be a probability from 0 to 1 (got '$relay_crash')" >&2; exit 2; }
((orders >= 1 && clients >= 1 && kill_every >= 1 && shipping_rate >= 1)) ||
  { echo "demo: DEMO_ORDERS, DEMO_CLIENTS, DEMO_KILL_EVERY and DEMO_SHIPPING_RATE must be at least 1" >&2; exit 2; }

ex="$build/examples"
ferry="$build/ferry"
for p in "$ferry" "$ex/shop-fakes" "$ex/shop-api" "$ex/shop-worker" "$ex/shop-demo" \
  "$ex/taskflow-api" "$ex/taskflow-worker"; do
  [[ -x $p ]] || { echo "demo: $p is missing: build first (make all)" >&2; exit 1; }
done

dir="$(mktemp -d /tmp/ferry-demo.XXXXXX)"
chaos_pid=""
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  local rc=$? f
  if [[ -n $chaos_pid ]]; then kill "$chaos_pid" 2>/dev/null || true; fi
  for f in "$dir"/*.pid; do
    if [[ -e $f ]]; then kill -9 "$(cat "$f")" 2>/dev/null || true; fi
  done
  wait 2>/dev/null || true
  FERRY_TESTENV_NO_GUARD=1 scripts/testenv.sh stop "$dir/servers" >/dev/null 2>&1 || true
  if [[ ${DEMO_KEEP:-0} == 1 || $rc != 0 ]]; then
    echo "demo: logs and acknowledgements kept in $dir" >&2
  else
    rm -rf "$dir"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t_start=$(date +%s%3N)
say() { printf '%s demo: %s\n' "$(date -u +%H:%M:%S)" "$*"; }

say "starting private PostgreSQL and Redis in $dir/servers"
FERRY_TESTENV_NO_GUARD=1 scripts/testenv.sh start "$dir/servers" --with-postgres --redis-persist none \
  >"$dir/servers.log" 2>&1 || { cat "$dir/servers.log" >&2; exit 1; }
REDIS_URL=$(sed -n 's/^REDIS_URL=//p' "$dir/servers/env")
DATABASE_URL=$(sed -n 's/^DATABASE_URL=//p' "$dir/servers/env")
export REDIS_URL DATABASE_URL

say "migrating (ferry migrate --schema shop, --schema taskflow)"
"$ferry" migrate --database "$DATABASE_URL" --schema shop >/dev/null
"$ferry" migrate --database "$DATABASE_URL" --schema taskflow >/dev/null

# launch NAME PROGRAM ARGS...: run it in the background under a watcher subshell that records
# its exit status in $dir/NAME.status; its own pid (the one to signal) goes to $dir/NAME.pid.
# Its stdout and stderr are appended to $dir/NAME.{out,err}. With SUPERVISE=1 the watcher
# starts it again after a crash (SIGKILL: 137; shop-worker's --crash-after-publish: 86) until
# $dir/stopping exists, as a process supervisor would.
launch() {
  local name=$1 supervise=${SUPERVISE:-0}
  shift
  rm -f "$dir/$name.status" "$dir/$name.pid"
  (
    trap - EXIT INT TERM
    while :; do
      "$@" >>"$dir/$name.out" 2>>"$dir/$name.err" &
      echo $! >"$dir/$name.pid.tmp" && mv "$dir/$name.pid.tmp" "$dir/$name.pid"
      st=0
      wait $! 2>/dev/null || st=$?
      if ((supervise)) && [[ ! -e $dir/stopping ]] && ((st == 137 || st == 86)); then
        echo "$(date -u +%H:%M:%S) $name exited with status $st, restarted" >>"$dir/restarts"
        continue
      fi
      echo "$st" >"$dir/$name.status"
      break
    done
  ) &
  while [[ ! -s $dir/$name.pid ]]; do sleep 0.01; done
}

# start NAME WANT PROGRAM ARGS...: launch, then wait until it prints "listening on" (WANT=port,
# sets PORT) or "ready".
PORT=""
start() {
  local name=$1 want=$2 i
  shift 2
  : >"$dir/$name.out"
  launch "$name" "$@"
  for ((i = 0; i < 300; i++)); do
    if [[ $want == port ]] && grep -q '^listening on ' "$dir/$name.out"; then
      PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$dir/$name.out" | head -1)
      return 0
    fi
    if [[ $want == ready ]] && grep -q '^ready$' "$dir/$name.out"; then return 0; fi
    if [[ -e $dir/$name.status ]]; then
      echo "demo: $name exited at start:" >&2
      tail -n 20 "$dir/$name.err" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "demo: $name was not ready in 30 s:" >&2
  tail -n 20 "$dir/$name.err" >&2
  exit 1
}

start fakes port "$ex/shop-fakes" --listen 127.0.0.1:0 --seed "$seed"
fakes="http://127.0.0.1:$PORT"
export GATEWAY_URL="$fakes/gateway" CARRIER_URL="$fakes/carrier" MAILER_URL="$fakes/mailer"
start api port "$ex/shop-api" --listen 127.0.0.1:0 --schema shop
api="http://127.0.0.1:$PORT"
start taskflow-api port "$ex/taskflow-api" --listen 127.0.0.1:0 --schema taskflow
tf_api="http://127.0.0.1:$PORT"
"$ex/shop-demo" prepare --redis "$REDIS_URL" --prefix shop --queue taskflow:notifications
start taskflow-worker ready "$ex/taskflow-worker" --schema taskflow
worker_args=(--schema shop --shipping-rate "$shipping_rate" --lock-duration-ms 5000
  --stalled-interval-ms 2000 --drain-timeout-ms 10000 --crash-after-publish "$relay_crash")
SUPERVISE=1 start worker-1 ready "$ex/shop-worker" --name demo-worker-1 "${worker_args[@]}"
SUPERVISE=1 start worker-2 ready "$ex/shop-worker" --name demo-worker-2 "${worker_args[@]}"
say "shop-fakes $fakes, shop-api $api, taskflow-api $tf_api, two shop-workers, one taskflow-worker"

cat <<EOF

  Watch it from another shell while it runs:
    export REDIS_URL=$REDIS_URL DATABASE_URL=$DATABASE_URL
    $ferry queue counts --prefix shop payments      (also notifications, shipping, loyalty)
    $ferry outbox status --schema shop
    $ferry dlq list --schema shop
    curl -s $fakes/ledger | head -c 600

EOF

if ((faults)); then
  # 3% errors everywhere; captures also drop after capturing and answer past the client's
  # timeout; the carrier throttles (429, Retry-After as seconds and as an HTTP-date); the
  # mailer drops after sending. Every one of them is retried by someone.
  curl -sf -X POST "$fakes/faults" -H 'Content-Type: application/json' -d '{
    "*": {"error_rate": 0.03},
    "gateway.capture": {"error_rate": 0.03, "drop_rate": 0.03, "slow_rate": 0.02, "slow_ms": 2500},
    "carrier.create": {"error_rate": 0.03, "throttle_rate": 0.05, "retry_after_s": 1},
    "mailer.send": {"error_rate": 0.03, "drop_rate": 0.03}
  }' >/dev/null
  say "providers' faults on: 5xx, slow answers past the timeout, 429 + Retry-After, dropped after the effect"
fi

# The chaos: every few seconds one shop-worker (its relay and its workers) is SIGKILLed and
# its supervisor starts it again at once; jobs it held come back as stalled, batches it was
# publishing are published again (their jobIds absorb it). Besides, each shop-worker's relay
# crashes by itself now and then right after publishing a batch (--crash-after-publish).
chaos() {
  local n=0 victim pid i
  trap - EXIT INT TERM
  while :; do
    sleep "$kill_every"
    [[ -e $dir/chaos.stop ]] && return 0
    victim="worker-$((RANDOM % 2 + 1))"
    pid=$(cat "$dir/$victim.pid")
    kill -9 "$pid" 2>/dev/null || true
    for ((i = 0; i < 500; i++)); do # the supervisor has started the next one
      [[ $(cat "$dir/$victim.pid" 2>/dev/null) != "$pid" ]] && break
      sleep 0.01
    done
    n=$((n + 1))
    echo "$(date -u +%H:%M:%S) demo: chaos #$n: SIGKILL $victim (pid $pid), restarted"
    echo "$n" >"$dir/kills"
  done
}
chaos &
chaos_pid=$!
chaos_until=$(($(date +%s) + chaos_s))

t0=$(date +%s%3N) # the first order
say "placing $orders orders from $clients clients, cancelling about 10%, assigning $tasks tasks"
"$ex/shop-demo" load --api "$api" --orders "$orders" --clients "$clients" --cancel-rate 0.1 \
  --taskflow-url "$tf_api" --tasks "$tasks" --out "$dir/acks" --seed "$seed" 2>"$dir/load.err" ||
  { tail -n 20 "$dir/load.err" >&2; echo "demo: the load client failed" >&2; exit 1; }
poison_line=$("$ex/shop-demo" poison --database "$DATABASE_URL" --redis "$REDIS_URL" --schema shop \
  --taskflow-schema taskflow --taskflow-topic task.assigned.v1)
echo "$poison_line"
poison=$(sed -n 's/.*; \([0-9]*\) dead letters must follow/\1/p' <<<"$poison_line")
# the kills go on while the jobs are being processed, until everything drained or
# DEMO_CHAOS_S passed since the first order
reconcile_args=(--database "$DATABASE_URL" --redis "$REDIS_URL" --schema shop --fakes "$fakes"
  --taskflow-schema taskflow --taskflow-prefix taskflow --taskflow-queue notifications
  --taskflow-template task-assigned)
say "orders placed; the kills go on while the jobs run"
"$ex/shop-demo" reconcile "${reconcile_args[@]}" --wait-only --timeout-s "$chaos_s" >"$dir/drain.log" 2>&1 &
drain_pid=$!
while kill -0 "$drain_pid" 2>/dev/null && (($(date +%s) < chaos_until)); do sleep 0.5; done
kill "$drain_pid" 2>/dev/null || true
wait "$drain_pid" 2>/dev/null || true
touch "$dir/chaos.stop"
wait "$chaos_pid" 2>/dev/null || true
chaos_pid=""
crashes=$(grep -c 'status 86' "$dir/restarts" 2>/dev/null || true)
say "chaos over after $(cat "$dir/kills" 2>/dev/null || echo 0) kills and ${crashes:-0} relay crashes after publishing; waiting for the outbox and the queues to drain"

rc=0
"$ex/shop-demo" reconcile "${reconcile_args[@]}" --acks "$dir/acks" --poison "$poison" \
  --since-ms "$t0" --timeout-s 150 || rc=$?

# Graceful shutdown: SIGTERM drains and exits 0.
touch "$dir/stopping"
for name in worker-1 worker-2 taskflow-worker api taskflow-api fakes; do
  pid=$(cat "$dir/$name.pid")
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    [[ -e $dir/$name.status ]] && break
    sleep 0.1
  done
  st=$(cat "$dir/$name.status" 2>/dev/null || echo "none after 30 s")
  rm -f "$dir/$name.pid"
  if [[ $st != 0 ]]; then
    echo "demo: $name exited with status $st after SIGTERM (see $dir/$name.err)" >&2
    rc=1
  fi
done
say "everything stopped on SIGTERM; took $((($(date +%s%3N) - t_start) / 1000)) s in all"
exit "$rc"
