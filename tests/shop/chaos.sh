#!/usr/bin/env bash
# chaos.sh BUILD_DIR - run scripts/demo.sh (sizes from DEMO_* in the environment) and check that
# it really did what it reports: exit 0, every invariant line clean, workers killed, relays
# crashed after publishing and their repeats absorbed, faults injected, orders captured and
# shipped, poison turned into dead letters.
set -uo pipefail
build=$1
root="$(cd "$(dirname "$0")/../.." && pwd)"
out=$(mktemp /tmp/ferry-chaos.XXXXXX)
trap 'rm -f "$out"' EXIT
"$root/scripts/demo.sh" "$build" >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "chaos.sh: FAILED: $*" >&2; exit 1; }
((rc == 0)) || fail "scripts/demo.sh exited with $rc"
grep -q '^lost 0$' "$out" || fail "no 'lost 0' line"
grep -q '^double 0$' "$out" || fail "no 'double 0' line"
grep -q '^reconcile: OK$' "$out" || fail "no 'reconcile: OK' line"
grep -q 'chaos #1: SIGKILL' "$out" || fail "no shop-worker was killed"
n=$(sed -n 's/^orders placed *\([0-9]*\).*/\1/p' "$out")
[[ $n == "${DEMO_ORDERS:-1000}" ]] || fail "orders placed: '$n', expected ${DEMO_ORDERS:-1000}"
cap=$(sed -n 's/^captured exactly once *\([0-9]*\).*/\1/p' "$out")
((cap > 0)) || fail "nothing captured"
ship=$(sed -n 's/^shipped exactly once *\([0-9]*\).*/\1/p' "$out")
((ship == cap)) || fail "shipped $ship, captured $cap"
errs=$(sed -n 's/^faults injected *errors \([0-9]*\).*/\1/p' "$out")
((errs > 0)) || fail "no fault was injected"
# relays that crashed after publishing published their batches again: absorbed by jobId
crashes=$(sed -n 's/.* and \([0-9]*\) relay crashes after publishing.*/\1/p' "$out")
byid=$(sed -n 's/^  by jobId (events the relay published again) *\([0-9]*\)$/\1/p' "$out")
if [[ ${DEMO_RELAY_CRASH:-0} != 0 ]]; then
  ((crashes > 0)) || fail "no relay crashed after publishing (DEMO_RELAY_CRASH=$DEMO_RELAY_CRASH)"
  ((byid > 0)) || fail "relays crashed after publishing, but no duplicate was absorbed by jobId"
fi
grep -Eq '^dead letters +[1-9][0-9]* +\(([0-9]+) poison, \1 expected\)' "$out" ||
  fail "the dead letters are not exactly the poison"
echo "chaos.sh: OK"
