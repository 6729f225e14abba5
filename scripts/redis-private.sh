#!/usr/bin/env bash
# redis-private.sh - a private plain redis-server for `make demo` and `make bench`: loopback on a
# free port, a unix socket, no persistence, everything inside one directory.
#
#   redis-private.sh start DIR   wipe DIR, start redis-server, write DIR/env, print REDIS_URL=...
#   redis-private.sh stop DIR    stop it (idempotent; exit 0 when nothing runs)
#
# Same server as the plain one of scripts/testenv.sh (shared code in scripts/lib.sh), without TLS.
# When DIR's path holds whitespace or shell/glob characters the server lives in a directory
# under /tmp instead (lib.sh: ferry_server_dir_make); DIR/env names it.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

FERRY_PROG=redis-private.sh
FERRY_SCRIPTS=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$FERRY_SCRIPTS/lib.sh"

usage() {
    sed -n '5,6s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
    exit 2
}

stop_all() {
    local dir=$1 sdir
    sdir=$(ferry_server_dir "$dir")
    rm -f -- "$dir/env"
    ferry_redis_stop_pidfile "$sdir/redis/redis.pid" || return 1
    ferry_redis_cleanup_sockdir "$sdir"
    ferry_server_dir_remove "$dir"
}

cmd_start() {
    local dir sock t sdir
    dir=$(ferry_abspath "${1:-}")
    for t in redis-server redis-cli ss timeout; do
        command -v "$t" >/dev/null 2>&1 || ferry_die "missing $t; run scripts/install-deps.sh"
    done
    if [[ -e $dir/$FERRY_MARKER ]]; then stop_all "$dir" || ferry_die "could not stop the old server in $dir"; fi
    ferry_prepare_dir "$dir"
    # Failure or interruption: stop what started. The traps may run inside lib.sh functions
    # that have a `local dir` of their own: the directory goes in a global of its own.
    FERRY_REDIS_PRIVATE_CLEANUP_DIR=$dir
    trap 'stop_all "$FERRY_REDIS_PRIVATE_CLEANUP_DIR" || true' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    sdir=$(ferry_server_dir_make "$dir")
    mkdir -p "$sdir/redis"
    sock=$(ferry_redis_sock_path "$sdir")
    ferry_redis_start_plain "$sdir/redis" "$sock" || ferry_die "redis-server did not start"
    {
        echo "REDIS_URL=redis://127.0.0.1:$FERRY_REDIS_PORT"
        echo "REDIS_PORT=$FERRY_REDIS_PORT"
        echo "REDIS_UNIX=$sock"
        echo "REDIS_DIR=$sdir/redis"
        echo "REDIS_PIDFILE=$sdir/redis/redis.pid"
        echo "REDIS_LOG=$sdir/redis/redis.log"
    } | ferry_write_env "$dir/env"
    trap - EXIT INT TERM
    echo "REDIS_URL=redis://127.0.0.1:$FERRY_REDIS_PORT"
}

cmd_stop() {
    local dir
    dir=$(ferry_abspath "${1:-}")
    [[ -e $dir/$FERRY_MARKER ]] || return 0
    stop_all "$dir" || ferry_die "redis-server in $dir did not stop"
}

case ${1:-} in
    start) cmd_start "${2:-}" ;;
    stop) cmd_stop "${2:-}" ;;
    *) usage ;;
esac
