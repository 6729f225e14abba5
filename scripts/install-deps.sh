#!/usr/bin/env bash
# install-deps.sh - install what building and testing ferry needs on Debian 12 (`make deps`).
# Idempotent and silent when everything is there: packages are checked with dpkg-query first and
# apt runs only for what is missing; Node packages for the interop tests (tests/interop) are
# installed with `npm ci` only when node_modules is missing or older than the lockfile (and so
# is playwright-core for the browser tests, tests/browser).
# As root it installs; otherwise it prints what to install and exits 1.
set -euo pipefail

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
prog=install-deps.sh

pkgs=(
    build-essential cmake pkg-config clang libclang-rt-14-dev llvm-14 tzdata
    libhiredis-dev libjansson-dev libssl-dev libcmocka-dev libpq-dev
    redis-server redis-tools postgresql openssl ca-certificates locales
    iproute2 jq libpcre2-dev json-schema-test-suite
    libmicrohttpd-dev libcurl4-openssl-dev
    prometheus # the server (tests/integration/test_prometheus.c scrapes ferry with it) and promtool (checks the /metrics text)
    python3 python3-yaml systemd # tests/deploy/check.sh: the alert rules and dashboard read in Python, systemd-analyze verify on deploy/systemd
    chromium # the dashboard's browser tests (tests/browser) drive Debian's headless Chromium with playwright-core
)
# Only what the build, the tests and the scripts use today; a library is added with the code
# that links it. (libmicrohttpd: the library's /metrics listener and the examples' HTTP
# server; libcurl: the examples' HTTP client; tzdata: the scheduler's IANA zones; locales: the comma-decimal locale
# test_numtext compiles; ca-certificates: npm's registry over TLS.
# iproute2: `ss`, with which scripts/lib.sh finds free ports; jq: bench/run.sh. Both are
# missing from minimal images such as containers and debootstrap --variant=minbase.
# llvm-14: llvm-symbolizer, without which sanitizer reports have no function names and the
# LeakSanitizer suppressions, which match names, do not apply.
# libpcre2-dev: the "pattern" keyword of payload contracts; json-schema-test-suite: the official
# JSON Schema test cases, which tests/unit/test_contract_suite.c runs against the validator.)
# Node may come from elsewhere (e.g. a vendor nodejs that bundles npm); only without it do we
# take Debian's, whose nodejs 18 satisfies BullMQ 6 (node >= 14.18).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    pkgs+=(nodejs npm)
fi

missing=()
installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${pkgs[@]}" 2>/dev/null || true)
for p in "${pkgs[@]}"; do
    grep -qx "$p .i *" <<<"$installed" || missing+=("$p")
done

if ((${#missing[@]})); then
    if ((EUID != 0)); then
        {
            echo "$prog: missing Debian packages: ${missing[*]}"
            echo "install them as root with:"
            echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
        } >&2
        exit 1
    fi
    echo "$prog: installing ${missing[*]}" >&2
    # Keep the packages' services (a system redis on 6379, a postgres cluster on 5432) from
    # starting: ferry's tests run their own private servers. An existing policy is left as is,
    # and services already running are not touched.
    policy=/usr/sbin/policy-rc.d
    made_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\n# temporary, from ferry scripts/install-deps.sh\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        made_policy=1
        trap 'rm -f "$policy"' EXIT
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
    if ((made_policy)); then
        rm -f "$policy"
        trap - EXIT
    fi
fi

# Node BullMQ for the interop tests, pinned by the committed lockfile. npm ci rewrites
# node_modules/.package-lock.json, which is therefore newer than the lockfile after a good run.
interop=$root/tests/interop
stamp=$interop/node_modules/.package-lock.json
if [[ -f $interop/package-lock.json ]] &&
    { [[ ! -f $stamp ]] || [[ $interop/package-lock.json -nt $stamp ]] || [[ $interop/package.json -nt $stamp ]]; }; then
    command -v npm >/dev/null 2>&1 || { echo "$prog: npm not found (install nodejs and npm)" >&2; exit 1; }
    echo "$prog: installing Node packages for the interop tests (npm ci in tests/interop)" >&2
    (cd "$interop" && npm ci --no-audit --no-fund --loglevel=error)
fi

# playwright-core for the browser tests, pinned the same way. It drives /usr/bin/chromium (the
# Debian package above) and downloads no browser of its own.
browser=$root/tests/browser
stamp=$browser/node_modules/.package-lock.json
if [[ -f $browser/package-lock.json ]] &&
    { [[ ! -f $stamp ]] || [[ $browser/package-lock.json -nt $stamp ]] || [[ $browser/package.json -nt $stamp ]]; }; then
    command -v npm >/dev/null 2>&1 || { echo "$prog: npm not found (install nodejs and npm)" >&2; exit 1; }
    echo "$prog: installing Node packages for the browser tests (npm ci in tests/browser)" >&2
    (cd "$browser" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
