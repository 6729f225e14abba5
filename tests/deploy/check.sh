#!/usr/bin/env bash
# check.sh BUILD_DIR - checks the files under deploy/:
#   1. deploy/prometheus/ferry-rules.yml: `promtool check rules` and its unit tests
#      (`promtool test rules deploy/prometheus/ferry-rules.test.yml`);
#   2. deploy/grafana/ferry.json: valid JSON, a Grafana dashboard with the datasource and
#      `queue` variables, every panel's datasource the variable;
#   3. deploy/systemd/*.service: `systemd-analyze verify` (any warning fails), the stop timeout
#      longer than the program's own drain deadline, no URL with a password in them;
#   4. every ferry_* metric named in the rules' expressions and the dashboard's queries is one
#      ferry really exports: private Redis + PostgreSQL (scripts/testenv.sh), then the real
#      `ferry worker` (after a few jobs), `ferry relay` and `ferry serve` are scraped and their
#      `# TYPE` lines are the list. Histogram series (_bucket, _sum, _count) count as their family.
#      Families registered on first use (the first dead letter a worker's recorder writes, the
#      first redrive ferry serve runs, the first duplicate an inbox claim sees; a scrape of an
#      idle system does not list them) are accepted only from LIBRARY_ONLY below and only while
#      src/ still registers that exact name.
# A missing tool fails the check (nothing is skipped). Exit 0 when all pass, 1 otherwise.
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:?usage: check.sh BUILD_DIR}" && pwd)
ferry=$build/ferry
deploy=$root/deploy
LIBRARY_ONLY=(ferry_dead_letters_total ferry_redrives_total ferry_inbox_duplicates_total)

fail() {
    echo "deploy check: FAIL: $*" >&2
    exit 1
}
note() { echo "deploy check: $*"; }

# Debian's python3 (python3-yaml is installed for it), not whatever python3 PATH finds first
[[ -x /usr/bin/python3 ]] && python3() { /usr/bin/python3 "$@"; }
for t in promtool systemd-analyze python3 curl redis-server; do # PostgreSQL: scripts/testenv.sh finds it
    command -v "$t" >/dev/null 2>&1 || fail "missing tool $t (scripts/install-deps.sh)"
done
python3 -c 'import yaml' 2>/dev/null || fail "python3 has no yaml module (python3-yaml)"
[[ -x $ferry ]] || fail "no $ferry (build the ferry_cli target)"

tmp=$(mktemp -d /tmp/ferry-deploy-check-XXXXXX)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    "$root/scripts/testenv.sh" stop "$tmp/env" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# --- 1. alert rules -------------------------------------------------------------------------
promtool check rules "$deploy/prometheus/ferry-rules.yml" >"$tmp/out" 2>&1 ||
    { cat "$tmp/out" >&2; fail "promtool check rules"; }
(cd "$deploy/prometheus" && promtool test rules ferry-rules.test.yml) >"$tmp/out" 2>&1 ||
    { cat "$tmp/out" >&2; fail "promtool test rules"; }
note "rules: check and unit tests pass"

# Every alert has for:, severity, summary, description and a runbook anchor; every alert is
# named in the unit tests, once firing and once with exp_alerts: [].
python3 - "$deploy/prometheus/ferry-rules.yml" "$deploy/prometheus/ferry-rules.test.yml" <<'PY' ||
import sys, yaml
anchors = {"retry", "dead-letters", "replay", "stuck-outbox", "poison-messages", "backlog-age",
           "redis-down", "postgres-down", "stalling-worker"}
rules = [r for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"]]
tests = yaml.safe_load(open(sys.argv[2]))["tests"]
fired, quiet, bad = set(), set(), []
for t in tests:
    for a in t.get("alert_rule_test", []):
        (fired if a.get("exp_alerts") else quiet).add(a["alertname"])
for r in rules:
    n = r.get("alert")
    if not n:
        continue
    if not r.get("for"):
        bad.append(n + ": no for:")
    if r.get("labels", {}).get("severity") not in ("warning", "critical"):
        bad.append(n + ": severity not warning|critical")
    ann = r.get("annotations", {})
    for k in ("summary", "description", "runbook_url"):
        if not ann.get(k):
            bad.append(n + ": no " + k)
    url = ann.get("runbook_url", "")
    if not url.startswith("docs/runbook.md#") or url.split("#", 1)[1] not in anchors:
        bad.append(n + ": runbook_url " + url + " is not docs/runbook.md#<known anchor>")
    if n not in fired:
        bad.append(n + ": no unit test where it fires")
    if n not in quiet:
        bad.append(n + ": no unit test where it does not fire")
for b in bad:
    print("deploy check: FAIL: rules: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    fail "rules: see above"

# --- 2. dashboard ---------------------------------------------------------------------------
python3 - "$deploy/grafana/ferry.json" <<'PY' || fail "dashboard: see above"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit("deploy check: FAIL: dashboard: not valid JSON: %s" % e)
bad = []
if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < 36:
    bad.append("schemaVersion missing or below 36")
vs = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
if vs.get("DS_PROMETHEUS", {}).get("type") != "datasource":
    bad.append("no datasource variable DS_PROMETHEUS")
q = vs.get("queue", {})
qq = q.get("query", {})
qq = qq.get("query") if isinstance(qq, dict) else qq
if q.get("type") != "query" or qq != "label_values(ferry_queue_jobs, queue)":
    bad.append("no queue variable from label_values(ferry_queue_jobs, queue)")
ids = set()
for p in d.get("panels", []):
    if p.get("id") in ids:
        bad.append("panel id %s twice" % p.get("id"))
    ids.add(p.get("id"))
    if p.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
        bad.append("panel %r: datasource is not ${DS_PROMETHEUS}" % p.get("title"))
    if not p.get("targets"):
        bad.append("panel %r: no query" % p.get("title"))
    for t in p.get("targets", []):
        if not t.get("expr"):
            bad.append("panel %r: empty expr" % p.get("title"))
for b in bad:
    print("deploy check: FAIL: dashboard: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
note "dashboard: valid ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["panels"]))' "$deploy/grafana/ferry.json") panels)"

# --- 3. systemd units -----------------------------------------------------------------------
# verify needs the ExecStart binary to exist: point it at this build's ferry, and instantiate
# the worker template for a queue.
mkdir "$tmp/units"
for u in ferry-worker@.service ferry-relay.service ferry-serve.service; do
    [[ -f $deploy/systemd/$u ]] || fail "no deploy/systemd/$u"
    sed "s#/usr/local/bin/ferry #$ferry #" "$deploy/systemd/$u" >"$tmp/units/$u"
done
mv "$tmp/units/ferry-worker@.service" "$tmp/units/ferry-worker@mail.service"
if ! systemd-analyze verify "$tmp"/units/*.service >"$tmp/out" 2>&1 || [[ -s $tmp/out ]]; then
    cat "$tmp/out" >&2
    fail "systemd-analyze verify reported problems"
fi
# (outside comments: a URL with user:password@, a password= conninfo, PGPASSWORD)
grep -vh '^#' "$deploy"/systemd/*.service |
    grep -iE '://[^[:space:]/]*:[^[:space:]/]*@|password[[:space:]]*=|PGPASSWORD' &&
    fail "a unit file holds a secret"
# TimeoutStopSec (s) > the drain deadline the unit passes (ms)
for u in ferry-worker@ ferry-serve; do
    f=$deploy/systemd/$u.service
    stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$f")
    drain=$(grep -oE -- '--(shutdown|stop)-timeout [0-9]+' "$f" | grep -oE '[0-9]+$')
    [[ -n $stop && -n $drain ]] || fail "$u.service: no TimeoutStopSec or drain timeout"
    ((stop * 1000 > drain)) || fail "$u.service: TimeoutStopSec=$stop is not above $drain ms"
done
for u in "$deploy"/systemd/*.service; do
    for k in KillSignal=SIGTERM Restart=on-failure NoNewPrivileges=yes ProtectSystem=strict \
        PrivateTmp=yes DynamicUser=yes; do
        grep -qx "$k" "$u" || fail "$(basename "$u"): no $k"
    done
    grep -q '^LoadCredential=' "$u" || fail "$(basename "$u"): no LoadCredential="
done
note "systemd: verify clean, timeouts and hardening present"

# --- 4. every metric named exists -----------------------------------------------------------
FERRY_TESTENV_NO_GUARD=1 "$root/scripts/testenv.sh" start "$tmp/env" --with-postgres \
    >"$tmp/testenv.log" 2>&1 || { cat "$tmp/testenv.log" >&2; fail "testenv start"; }
redis_url=$(sed -n 's/^REDIS_URL=//p' "$tmp/env/env")
db_url=$(sed -n 's/^DATABASE_URL=//p' "$tmp/env/env")
(umask 077 && echo "$redis_url" >"$tmp/redis-url" && echo "$db_url" >"$tmp/database-url")
echo "o.created dq:created" >"$tmp/routes"
"$ferry" migrate --database-url-file "$tmp/database-url" >"$tmp/out" 2>&1 ||
    { cat "$tmp/out" >&2; fail "ferry migrate"; }
for i in 1 2 3; do
    "$ferry" queue add --redis-url-file "$tmp/redis-url" --prefix dpl dq "job$i" '{}' \
        >/dev/null || fail "queue add"
done
"$ferry" worker --redis-url-file "$tmp/redis-url" --prefix dpl --metrics-listen 127.0.0.1:0 \
    dq -- /bin/true >"$tmp/worker.log" 2>&1 &
pids+=($!)
"$ferry" relay --redis-url-file "$tmp/redis-url" --database-url-file "$tmp/database-url" \
    --prefix dpl --routes "$tmp/routes" --metrics-listen 127.0.0.1:0 >"$tmp/relay.log" 2>&1 &
pids+=($!)
"$ferry" serve --listen 127.0.0.1:0 --redis-url-file "$tmp/redis-url" \
    --database-url-file "$tmp/database-url" --prefix dpl >"$tmp/serve.log" 2>&1 &
pids+=($!)

# The address each one printed at start (polled: at most 30 s).
addr_of() {
    local log=$1 re=$2 i a
    for ((i = 0; i < 300; i++)); do
        a=$(grep -oE "$re" "$log" | head -1 || true)
        [[ -n $a ]] && { echo "$a"; return 0; }
        sleep 0.1
    done
    cat "$log" >&2
    fail "no address line in $(basename "$log")"
}
w=$(addr_of "$tmp/worker.log" 'http://127\.0\.0\.1:[0-9]+/metrics')
r=$(addr_of "$tmp/relay.log" 'http://127\.0\.0\.1:[0-9]+/metrics')
s=$(addr_of "$tmp/serve.log" 'listening on http://127\.0\.0\.1:[0-9]+')
s=${s#listening on }/metrics
# The worker has processed the three jobs (polled: at most 30 s).
for ((i = 0; ; i++)); do
    n=$(curl -fsS "$w" | sed -n 's/^ferry_jobs_processed_total{queue="dq",.*outcome="completed"} //p' |
        awk '{s += $1} END {print s + 0}')
    ((n >= 3)) && break
    ((i < 300)) || fail "the worker did not complete 3 jobs (completed: $n)"
    sleep 0.1
done
for u in "$w" "$r" "$s"; do
    curl -fsS "$u" >>"$tmp/scraped" || fail "scrape $u"
done
awk '$1 == "#" && $2 == "TYPE" {print $3, $4}' "$tmp/scraped" | sort -u >"$tmp/families"
for m in "${LIBRARY_ONLY[@]}"; do
    grep -rqF "\"$m\"" "$root/src" || fail "LIBRARY_ONLY $m is no longer registered in src/"
    echo "$m library" >>"$tmp/families"
done

python3 - "$tmp/families" "$deploy/prometheus/ferry-rules.yml" "$deploy/grafana/ferry.json" <<'PY' ||
import json, re, sys, yaml
fam = dict(l.split() for l in open(sys.argv[1]) if l.strip())
exprs = [("rule " + r.get("alert", r.get("record", "?")), r["expr"])
         for g in yaml.safe_load(open(sys.argv[2]))["groups"] for r in g["rules"]]
d = json.load(open(sys.argv[3]))
for p in d["panels"]:
    exprs += [("panel " + p["title"], t["expr"]) for t in p.get("targets", [])]
for v in d["templating"]["list"]:
    q = v.get("query")
    if isinstance(q, dict):
        q = q.get("query")
    if v.get("type") == "query":
        exprs.append(("variable " + v["name"], q))
bad, seen = [], set()
for where, e in exprs:
    for tok in re.findall(r"\bferry_[a-z0-9_]+", e):
        name = tok
        for suf in ("_bucket", "_sum", "_count"):
            if tok.endswith(suf) and fam.get(tok[: -len(suf)]) == "histogram":
                name = tok[: -len(suf)]
        seen.add(name)
        if name not in fam:
            bad.append("%s: %s is not exported by ferry" % (where, tok))
        elif name != tok and fam[name] != "histogram":
            bad.append("%s: %s is not a histogram series" % (where, tok))
for b in bad:
    print("deploy check: FAIL: " + b, file=sys.stderr)
print("deploy check: %d metric families used, all exported (%s from the library only)"
      % (len(seen), ", ".join(sorted(n for n in seen if fam.get(n) == "library")) or "none"))
sys.exit(1 if bad else 0)
PY
    fail "metric names: see above"

# The units rely on SIGTERM being a clean stop (exit 0, KillSignal=SIGTERM,
# Restart=on-failure): stop the three for real and check their exit status and logs.
names=(worker relay serve)
for i in 0 1 2; do
    kill -TERM "${pids[$i]}"
    rc=0
    wait "${pids[$i]}" || rc=$?
    ((rc == 0)) || { cat "$tmp/${names[$i]}.log" >&2; fail "ferry ${names[$i]}: SIGTERM gave exit $rc"; }
    if grep -E 'AddressSanitizer|LeakSanitizer|runtime error:' "$tmp/${names[$i]}.log" >&2; then
        fail "ferry ${names[$i]}: sanitizer report"
    fi
done
pids=()
note "all checks pass"
