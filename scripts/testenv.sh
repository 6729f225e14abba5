#!/usr/bin/env bash
# testenv.sh - the CTest `servers` fixture: private servers for the integration and interop
# tests, all inside one directory, on free loopback ports, stopped at the end.
#
#   testenv.sh start DIR [--with-postgres] [--redis-persist aof|none]
#                                            wipe DIR, start servers, write DIR/env, exit 0 only
#                                            when every server answered a real ping (none: the
#                                            plain server writes no AOF, as benchmarks want)
#   testenv.sh stop DIR                      stop whatever DIR's servers still run (idempotent)
#   testenv.sh redis-ctl DIR stop|start|kill9|restart|pid
#                                            act on the plain server (same port, same data dir);
#                                            DIR/redis-ctl is a wrapper for this
#
# Servers: a plain redis-server (TCP + unix socket, ACL user `ferry` / `secret@pw`, append-only
# file in its directory so its data survives redis-ctl kill9/stop + start), a TLS-only
# redis-server with a throwaway CA, and with --with-postgres a PostgreSQL cluster. DIR/env lists
# them as KEY=VALUE lines (tests/support/th.c reads it); see write_env below for the keys.
# When DIR's path holds whitespace or shell/glob characters the servers live in a directory
# under /tmp instead (lib.sh: ferry_server_dir_make); DIR/env names it.
#
# Run by ctest (the `servers` fixture), start also leaves a guard: a detached process that runs
# `stop DIR` once that ctest process is gone, since CTest skips fixture cleanup when it is
# interrupted (Ctrl-C, SIGTERM). stop ends the guard. While the guard's ctest runs, another
# start on the same DIR is refused rather than pulling the servers from under its tests.
# FERRY_TESTENV_NO_GUARD=1 disables the guard (servers kept after `ctest -R servers.start`).
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

FERRY_PROG=testenv.sh
FERRY_SCRIPTS=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$FERRY_SCRIPTS/lib.sh"
# The plain server persists like a production one (AOF, fsync every second; a test may CONFIG
# SET appendfsync always), so crash and outage tests can check that no job is lost.
FERRY_REDIS_PERSIST=aof

usage() {
    sed -n '4,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
    exit 2
}

need_tools() {
    local t missing=()
    for t in "$@"; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
    ((${#missing[@]} == 0)) || ferry_die "missing ${missing[*]}; run scripts/install-deps.sh"
}

# --- certificates -----------------------------------------------------------------------------

# Throwaway PKI in TLSDIR: ca.crt signs server.crt (CN localhost, SAN DNS:localhost and
# IP:127.0.0.1) and client.crt; other-ca.crt is an unrelated CA that must NOT validate the server.
# EC P-256 keys: generated in milliseconds, and every TLS stack we talk to accepts them.
make_certs() {
    local t=$1 name cn ext serial newkey
    cat >"$t/openssl.cnf" <<'EOF'
# Used only by scripts/testenv.sh to make test certificates; independent of the system config.
[req]
distinguished_name = dn
prompt = no
[dn]
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
    # Every step checks its status explicitly: `set -e` does not apply inside a `( ) || ...`.
    (
        cd "$t" || exit 1
        umask 077
        newkey=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
        for name in ca other-ca; do
            openssl req -config openssl.cnf -x509 -new "${newkey[@]}" -keyout "$name.key" \
                -out "$name.crt" -days 3650 -subj "/O=ferry tests/CN=ferry $name" \
                -extensions ca_ext || exit 1
        done
        for name in server client; do
            cn=localhost ext=server_ext
            [[ $name == server ]] || cn=ferry-test-client ext=client_ext
            openssl req -config openssl.cnf -new "${newkey[@]}" -keyout "$name.key" \
                -out "$name.csr" -subj "/O=ferry tests/CN=$cn" || exit 1
            serial=$(openssl rand -hex 8) || exit 1
            openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -set_serial "0x$serial" \
                -days 3650 -out "$name.crt" -extfile openssl.cnf -extensions "$ext" || exit 1
            rm -f "$name.csr"
        done
        chmod 644 ./*.crt || exit 1
        # Prove the chain is what the tests assume before any test relies on it.
        openssl verify -CAfile ca.crt -verify_hostname localhost server.crt || exit 1
        openssl verify -CAfile ca.crt -verify_ip 127.0.0.1 server.crt || exit 1
        openssl verify -CAfile ca.crt -purpose sslclient client.crt || exit 1
        if openssl verify -CAfile other-ca.crt server.crt; then
            echo "other-ca.crt unexpectedly validates server.crt" >&2
            exit 1
        fi
    ) >"$t/openssl.log" 2>&1 || {
        ferry_msg "certificate generation failed"
        ferry_log_tail "$t/openssl.log"
        return 1
    }
}

# --- TLS redis --------------------------------------------------------------------------------

# TLS only (port 0 disables plain TCP). Binds ::1 too when the host has it ("-" = optional),
# so rediss://localhost works whichever address localhost resolves to first.
write_tls_conf() {
    local conf=$1 dir=$2 port=$3 t=$4
    cat >"$conf" <<EOF
# TLS redis-server written by scripts/testenv.sh; restart with: redis-server $conf
port 0
tls-port $port
bind 127.0.0.1 -::1
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
dir $dir
save ""
appendonly no
maxmemory-policy noeviction
tls-cert-file $t/server.crt
tls-key-file $t/server.key
tls-ca-cert-file $t/ca.crt
tls-auth-clients no
user ferry on >secret@pw ~* &* +@all
EOF
}

# Start the TLS server in DIR/redis-tls; sets TLS_PORT. Args: dir [ports to avoid...]
start_tls_redis() {
    local dir=$1 rdir=$1/redis-tls port try rc
    shift
    for ((try = 1; try <= FERRY_PORT_TRIES; try++)); do
        port=$(ferry_pick_port "$@")
        write_tls_conf "$rdir/redis.conf" "$rdir" "$port" "$dir/tls"
        rc=0
        ferry_redis_launch "$rdir/redis.conf" "$rdir" "$rdir/redis.log" "$rdir/redis.pid" \
            --tls --cacert "$dir/tls/ca.crt" -h 127.0.0.1 -p "$port" || rc=$?
        if ((rc == 0)); then
            TLS_PORT=$port
            return 0
        fi
        if ((rc != 2)); then
            ferry_log_tail "$rdir/redis.log"
            return 1
        fi
        ferry_msg "port $port was taken before redis-server could bind it; trying another"
    done
    ferry_msg "gave up after $FERRY_PORT_TRIES port collisions"
    return 1
}

# --- checks beyond the readiness ping ---------------------------------------------------------

# Expect PONG from `redis-cli ARGS ping`; WHAT names the check in the error.
expect_pong() {
    local what=$1 out
    shift
    out=$(ferry_redis_cli --no-auth-warning "$@" ping 2>&1 || true)
    [[ $out == PONG ]] || { ferry_msg "$what: expected PONG, got: ${out:-nothing}"; return 1; }
}

verify_servers() {
    local dir=$1 sock=$2
    expect_pong "unix socket $sock" -s "$sock" &&
        expect_pong "ACL user ferry" --user ferry --pass 'secret@pw' -h 127.0.0.1 -p "$REDIS_PORT" &&
        expect_pong "TLS with client certificate" --tls --cacert "$dir/tls/ca.crt" \
            --cert "$dir/tls/client.crt" --key "$dir/tls/client.key" -h localhost -p "$TLS_PORT"
}

# --- env --------------------------------------------------------------------------------------

# Args: DIR (where env goes), SDIR (where the servers live), unix socket.
write_env() {
    local envdir=$1 dir=$2 sock=$3
    {
        echo "REDIS_URL=redis://127.0.0.1:$REDIS_PORT"
        echo "REDIS_PORT=$REDIS_PORT"
        echo "REDIS_UNIX=$sock"
        echo "REDIS_ACL_URL=redis://ferry:secret%40pw@127.0.0.1:$REDIS_PORT"
        echo "REDIS_ACL_USER=ferry"
        echo "REDIS_ACL_PASSWORD=secret@pw"
        echo "REDIS_TLS_URL=rediss://localhost:$TLS_PORT"
        echo "REDIS_TLS_PORT=$TLS_PORT"
        echo "TLS_CA=$dir/tls/ca.crt"
        echo "TLS_CERT=$dir/tls/client.crt"
        echo "TLS_KEY=$dir/tls/client.key"
        echo "TLS_OTHER_CA=$dir/tls/other-ca.crt"
        echo "TLS_SERVER_CERT=$dir/tls/server.crt"
        echo "TLS_SERVER_KEY=$dir/tls/server.key"
        echo "REDIS_DIR=$dir/redis"
        echo "REDIS_PIDFILE=$dir/redis/redis.pid"
        echo "REDIS_LOG=$dir/redis/redis.log"
        echo "REDIS_CONF=$dir/redis/redis.conf"
        # One argument: `redis-server $REDIS_SERVER_ARGS` restarts the same server.
        echo "REDIS_SERVER_ARGS=$dir/redis/redis.conf"
        echo "REDIS_CTL=$dir/redis-ctl"
        echo "REDIS_TLS_PIDFILE=$dir/redis-tls/redis.pid"
        if [[ -n ${PG_PORT:-} ]]; then
            echo "DATABASE_URL=postgresql://ferry@127.0.0.1:$PG_PORT/ferry"
            echo "PG_PORT=$PG_PORT"
            echo "PG_DATA=$PG_DIR/data"
        fi
    } | ferry_write_env "$envdir/env"
}

write_redis_ctl() {
    local dir=$1
    {
        echo '#!/usr/bin/env bash'
        echo '# Control the plain private redis-server of this directory: stop|start|kill9|restart|pid.'
        # %q: the checkout path may hold spaces or shell characters.
        printf 'exec %q redis-ctl %q "$@"\n' "$FERRY_SCRIPTS/testenv.sh" "$dir"
    } >"$dir/redis-ctl"
    chmod 755 "$dir/redis-ctl"
}

# --- guard against an interrupted ctest -------------------------------------------------------

# DIR/.ctest-guard holds "GUARD_PID CTEST_PID CTEST_STARTTIME" while a guard watches.
GUARD_FILE=.ctest-guard

# Field N (3 or more: those after the command name, which may hold spaces) of /proc/PID/stat.
proc_stat_field() {
    local stat n=$(($2 - 2))
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    # shellcheck disable=SC2086 # split the fields
    set -- $stat
    echo "${!n}"
}

# Start time of PID in clock ticks (field 22): with the pid it names one process for good,
# so a reused pid is not taken for the ctest we watch.
proc_starttime() { proc_stat_field "$1" 22; }

# Pid of the nearest ctest among our ancestors (the fixture's parent, perhaps through a shell
# or `timeout`); nothing when started by hand.
find_ctest() {
    local pid=$PPID i comm
    for ((i = 0; i < 32 && pid > 1; i++)); do
        comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 0
        if [[ $comm == ctest ]]; then echo "$pid"; return 0; fi
        pid=$(proc_stat_field "$pid" 4) || return 0 # the parent
    done
}

# Read DIR's guard file into G_PID G_CTEST G_START (empty when none).
guard_read() {
    G_PID='' G_CTEST='' G_START=''
    if [[ -r $1/$GUARD_FILE ]]; then read -r G_PID G_CTEST G_START <"$1/$GUARD_FILE" || true; fi
}

# True when the ctest named by the guard file is still running.
guard_ctest_alive() {
    [[ -n $G_CTEST ]] && ferry_pid_alive "$G_CTEST" ctest &&
        [[ $(proc_starttime "$G_CTEST") == "$G_START" ]]
}

# True when PID is the guard process of DIR (its command line is "... testenv.sh _guard DIR ...").
is_guard_of() {
    local pid=$1 dir=$2 i
    local -a args
    ferry_pid_alive "$pid" || return 1
    mapfile -d '' -t args <"/proc/$pid/cmdline" 2>/dev/null || return 1
    for ((i = 0; i + 1 < ${#args[@]}; i++)); do
        [[ ${args[i]} == _guard && ${args[i + 1]} == "$dir" ]] && return 0
    done
    return 1
}

# End DIR's guard (unless we are it) and remove its file.
end_guard() {
    local dir=$1
    guard_read "$dir"
    if [[ -n $G_PID && $G_PID != "$$" ]] && is_guard_of "$G_PID" "$dir"; then
        kill -TERM "$G_PID" 2>/dev/null || true
    fi
    rm -f -- "$dir/$GUARD_FILE"
}

# Launch the detached guard for ctest CTEST (own session, stdio closed: ctest waits for EOF on
# the fixture's output pipes, and a Ctrl-C to ctest's process group must not reach it).
start_guard() {
    local dir=$1 ctest=$2 start
    start=$(proc_starttime "$ctest") || return 0
    setsid "$FERRY_SCRIPTS/testenv.sh" _guard "$dir" "$ctest" "$start" </dev/null >/dev/null 2>&1 &
    # A background job is not a process group leader, so setsid does not fork: $! is the guard.
    echo "$! $ctest $start" | ferry_write_env "$dir/$GUARD_FILE"
}

# The guard itself: wait for the ctest to go, then stop DIR's servers unless stop ran first
# (it removes the file and ends us).
cmd_guard() {
    local dir=$1 ctest=$2 start=$3
    trap 'exit 0' TERM
    while ferry_pid_alive "$ctest" ctest && [[ $(proc_starttime "$ctest") == "$start" ]]; do
        sleep 1
    done
    guard_read "$dir"
    [[ $G_PID == "$$" ]] || exit 0
    FERRY_PROG="testenv.sh (guard of ctest $ctest)"
    stop_all "$dir" || true
    rm -f -- "$dir/$GUARD_FILE"
}

# --- commands ---------------------------------------------------------------------------------

# Stop DIR's servers (wherever ferry_server_dir put them) and end its guard.
stop_all() {
    local dir=$1 sdir rc=0
    [[ -d $dir ]] || return 0
    end_guard "$dir"
    sdir=$(ferry_server_dir "$dir")
    rm -f -- "$dir/env"
    ferry_redis_stop_pidfile "$sdir/redis/redis.pid" || rc=1
    ferry_redis_stop_pidfile "$sdir/redis-tls/redis.pid" || rc=1
    ferry_pg_stop "$sdir/pg" || rc=1
    ferry_redis_cleanup_sockdir "$sdir"
    ((rc != 0)) || ferry_server_dir_remove "$dir"
    return "$rc"
}

cmd_start() {
    local dir with_pg=0 sock sdir ctest
    dir=$(ferry_abspath "${1:-}")
    shift || true
    while (($#)); do
        case $1 in
            --with-postgres) with_pg=1 ;;
            --redis-persist)
                [[ ${2:-} == aof || ${2:-} == none ]] ||
                    ferry_die "--redis-persist takes aof or none, not '${2:-}'"
                FERRY_REDIS_PERSIST=$2
                shift
                ;;
            *) usage ;;
        esac
        shift
    done
    need_tools redis-server redis-cli openssl ss timeout setsid
    ctest=
    [[ ${FERRY_TESTENV_NO_GUARD:-0} == 1 ]] || ctest=$(find_ctest)
    # Servers of a ctest run that is still going: stopping them would fail its tests.
    guard_read "$dir"
    if guard_ctest_alive && [[ $G_CTEST != "$ctest" ]]; then
        ferry_die "the servers in $dir belong to ctest (pid $G_CTEST), which is still running; not stopping them (wait for it, stop it, or use another build directory)"
    fi
    # A previous run that died may have left servers; stop them before wiping their files.
    if [[ -e $dir/$FERRY_MARKER ]]; then stop_all "$dir" || ferry_die "could not stop old servers in $dir"; fi
    ferry_prepare_dir "$dir"

    # Any failure or interruption from here on: stop what did start, keep the logs for
    # reading. The traps can run inside lib.sh functions that have a `local dir` of their
    # own, or after this function returned: the directory goes in a global of its own.
    FERRY_TESTENV_CLEANUP_DIR=$dir
    trap 'stop_all "$FERRY_TESTENV_CLEANUP_DIR" || true' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    sdir=$(ferry_server_dir_make "$dir")
    mkdir -p "$sdir/redis" "$sdir/redis-tls" "$sdir/tls"
    [[ $with_pg == 0 ]] || mkdir -p "$sdir/pg"
    sock=$(ferry_redis_sock_path "$sdir")
    ferry_redis_start_plain "$sdir/redis" "$sock" || ferry_die "plain redis-server did not start"
    REDIS_PORT=$FERRY_REDIS_PORT
    make_certs "$sdir/tls" || exit 1
    start_tls_redis "$sdir" "$REDIS_PORT" || ferry_die "TLS redis-server did not start"
    verify_servers "$sdir" "$sock" || ferry_die "servers started but do not behave as configured"
    if ((with_pg)); then
        ferry_pg_start "$sdir/pg" "$REDIS_PORT" "$TLS_PORT" || ferry_die "PostgreSQL did not start"
        PG_PORT=$FERRY_PG_PORT
        PG_DIR=$FERRY_PG_DIR
    fi
    write_redis_ctl "$sdir"
    write_env "$dir" "$sdir" "$sock"
    if [[ -n $ctest ]]; then start_guard "$dir" "$ctest"; fi
    trap - EXIT INT TERM
    printf 'testenv: redis 127.0.0.1:%s (unix %s), tls localhost:%s%s; env in %s/env%s\n' \
        "$REDIS_PORT" "$sock" "$TLS_PORT" "${PG_PORT:+, postgres 127.0.0.1:$PG_PORT}" "$dir" \
        "${ctest:+; stopped when ctest (pid $ctest) ends}"
}

cmd_stop() {
    local dir
    dir=$(ferry_abspath "${1:-}")
    [[ -e $dir/$FERRY_MARKER ]] || return 0
    stop_all "$dir" || ferry_die "some server in $dir did not stop"
}

cmd_redis_ctl() {
    local dir rdir port action=${2:-}
    dir=$(ferry_abspath "${1:-}")
    rdir=$(ferry_server_dir "$dir")/redis
    [[ -r $rdir/redis.conf ]] || ferry_die "no server configured in $dir (run start first)"
    port=$(sed -n 's/^port //p' "$rdir/redis.conf")
    case $action in
        stop) ferry_redis_stop_pidfile "$rdir/redis.pid" || ferry_die "redis-server did not stop" ;;
        kill9) ferry_redis_kill9_pidfile "$rdir/redis.pid" || ferry_die "redis-server did not die" ;;
        start | restart)
            [[ $action == start ]] || ferry_redis_stop_pidfile "$rdir/redis.pid" ||
                ferry_die "redis-server did not stop"
            if [[ -n $(ferry_pidfile_pid "$rdir/redis.pid" redis-server) ]]; then return 0; fi
            # Keep the old log: tests that crash the server may want to read it.
            local log=$rdir/redis.log rc=0
            [[ ! -s $log ]] || cat "$log" >>"$log.old"
            ferry_redis_launch "$rdir/redis.conf" "$rdir" "$log" "$rdir/redis.pid" \
                -h 127.0.0.1 -p "$port" || rc=$?
            if ((rc == 2)); then ferry_die "port $port is now used by another process"; fi
            if ((rc != 0)); then ferry_log_tail "$log"; ferry_die "redis-server did not restart"; fi
            ;;
        pid) ferry_pidfile_pid "$rdir/redis.pid" redis-server ;;
        *) usage ;;
    esac
}

case ${1:-} in
    start) shift; cmd_start "$@" ;;
    stop) shift; cmd_stop "${1:-}" ;;
    redis-ctl) shift; cmd_redis_ctl "$@" ;;
    _guard) shift; cmd_guard "$@" ;; # internal: see start_guard
    *) usage ;;
esac
