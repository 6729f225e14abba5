#!/usr/bin/env bash
# quickstart.sh BUILD_DIR - the quick start behind `make quickstart`: a private Redis, jobs produced and
# processed by a C worker (examples/quickstart), then the same through the ferry CLI with
# an exec worker, and a summary. Stops its Redis on exit, whatever happens.
set -euo pipefail
build="${1:-build}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
dir="$(mktemp -d /tmp/ferry-quickstart.XXXXXX)"
cleanup() { scripts/redis-private.sh stop "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"; }
# The signal traps exit (as bench/run.sh does), so an interrupted demo never carries on or
# ends with status 0; the EXIT trap then cleans up once.
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

url="$(scripts/redis-private.sh start "$dir" | sed -n 's/^REDIS_URL=//p')"
[ -n "$url" ] || { echo "quickstart: could not start a private Redis" >&2; exit 1; }
echo "== private Redis at $url"
echo
echo "== 1. C producer + C worker (examples/quickstart/quickstart.c)"
"$build/examples/quickstart" "$url" 2000
echo
echo "== 2. the ferry CLI: add jobs, run an exec worker, inspect"
ferry="$build/ferry"
export REDIS_URL="$url"
for i in 1 2 3; do
  id=$("$ferry" queue add demo-cli greet "{\"who\":\"friend $i\"}" --opts '{"attempts":2,"backoff":1000}')
  echo "   added job $id"
done
"$ferry" queue add demo-cli greet '{"who":"custom"}' --job-id order-42 >/dev/null
dup=$("$ferry" queue add demo-cli greet '{"who":"again"}' --job-id order-42)
echo "   duplicate add of order-42 returned $dup (nothing written)"
# shellcheck disable=SC2016 # $data and $FERRY_ATTEMPT are for the inner sh
"$ferry" worker demo-cli --concurrency 2 --max-jobs 4 -- \
  sh -c 'read -r data; echo "{\"greeted\":$data,\"attempt\":$FERRY_ATTEMPT}"'
"$ferry" queue counts demo-cli
"$ferry" job show demo-cli order-42
echo
echo "quickstart OK"
