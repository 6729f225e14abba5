#!/bin/sh
# handler.sh - the job command of tests/runbook/check.sh's workers. What it does depends on
# the job data's "k" (or the outbox envelope's payload.k):
#   fine (or none) -> completes;  timeout / declined -> permanent failure (exit 65) with a
#   reason;  transient -> transient failure (exit 75);  sleep -> sleeps 30 s while the file
#   $RUNBOOK_SLEEP_FLAG exists (a job that is running when its worker is killed), else completes.
data=$(cat)
k=$(printf '%s' "$data" | jq -r '.k // .payload.k // "fine"' 2>/dev/null) || k=fine
case $k in
    timeout) echo "gateway timeout" >&2; exit 65 ;;
    declined) echo "card declined" >&2; exit 65 ;;
    transient) echo "upstream unavailable" >&2; exit 75 ;;
    sleep) if [ -n "${RUNBOOK_SLEEP_FLAG:-}" ] && [ -e "$RUNBOOK_SLEEP_FLAG" ]; then sleep 30; fi ;;
esac
echo '{"ok":true}'
