# shellcheck shell=bash
# lib.sh - shell helpers shared by scripts/testenv.sh and scripts/redis-private.sh: messages,
# deadlines, free loopback ports, process checks, and start/stop of private redis-server and
# PostgreSQL instances that live entirely inside one directory. Sourced, never executed.
#
# Servers are found again only through the pidfiles in their directory, and a pid is signalled
# only after /proc confirms it still runs the expected program, so a stale pidfile whose pid was
# reused can never make us kill an unrelated process.

FERRY_PROG=${FERRY_PROG:-${0##*/}}
# Overall budget for one server to answer its first ping (seconds); CI boxes can be slow.
FERRY_START_DEADLINE_S=${FERRY_START_DEADLINE_S:-20}
# Budget for a server to exit after a polite stop before it gets SIGKILL (seconds).
FERRY_STOP_DEADLINE_S=${FERRY_STOP_DEADLINE_S:-10}
# Persistence of the plain private redis-server (ferry_redis_start_plain): "aof" = append-only
# file (fsync every second) in its data directory, so a kill -9 or a stop/start keeps the
# data, as a production server would; "none" = nothing is ever written (demo, benchmarks).
FERRY_REDIS_PERSIST=${FERRY_REDIS_PERSIST:-none}
# How many fresh ports to try when another process takes ours between choosing and binding.
FERRY_PORT_TRIES=${FERRY_PORT_TRIES:-20}
# Longest unix socket path the kernel accepts (sun_path is 108 bytes with the NUL).
FERRY_SUN_PATH_MAX=107

ferry_msg() { printf '%s: %s\n' "$FERRY_PROG" "$*" >&2; }
ferry_die() { printf '%s: error: %s\n' "$FERRY_PROG" "$*" >&2; exit 1; }

# Milliseconds since the epoch (bash 5 EPOCHREALTIME, no fork).
ferry_now_ms() {
    local t=${EPOCHREALTIME/[.,]/}
    echo $((10#$t / 1000))
}

# Print the last lines of a log file to stderr, indented, for failure reports.
ferry_log_tail() {
    local file=$1 n=${2:-20}
    if [[ -s $file ]]; then
        printf '%s: --- last %d lines of %s ---\n' "$FERRY_PROG" "$n" "$file" >&2
        tail -n "$n" "$file" | sed 's/^/    /' >&2
    else
        printf '%s: (%s is empty or missing)\n' "$FERRY_PROG" "$file" >&2
    fi
}

# Paths end up in redis.conf, pg_ctl -o (run by /bin/sh), KEY=VALUE files and URLs, which
# cannot all carry whitespace, quotes, globs or shell characters: a directory whose path holds
# any is replaced by one under /tmp (ferry_server_dir_make) rather than half-supported.

# True when path P holds only characters every consumer of our paths (redis.conf, sh -c, the
# env file, URLs, CMake lists) takes as they are.
FERRY_PATH_CHARS='A-Za-z0-9/._+,:@=-'
ferry_path_plain() { [[ $1 =~ ^[$FERRY_PATH_CHARS]+$ ]]; }

# The first character of P that ferry_path_plain rejects, named for messages.
ferry_path_bad_char() {
    local p=$1 i c
    for ((i = 0; i < ${#p}; i++)); do
        c=${p:i:1}
        if ! ferry_path_plain "$c"; then
            case $c in
                ' ') echo 'a space' ;; $'\t') echo 'a tab' ;; $'\n') echo 'a newline' ;;
                *) echo "'$c'" ;;
            esac
            return 0
        fi
    done
}

# Quote S for /bin/sh (single quotes; an embedded ' becomes '\'').
ferry_sh_quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# Make DIR absolute (it may not exist yet).
ferry_abspath() {
    local d=$1
    [[ -n $d ]] || ferry_die "missing DIR argument"
    [[ $d == /* ]] || d=$PWD/$d
    # Drop trailing slashes (but keep "/").
    while [[ $d == */ && $d != / ]]; do d=${d%/}; done
    echo "$d"
}

# --- processes --------------------------------------------------------------------------------

# True when PID exists, is not a zombie, and (if NAME is given) /proc/PID/comm equals NAME.
# Daemonized servers are reparented to PID 1, which may reap them late: a zombie counts as dead.
ferry_pid_alive() {
    local pid=$1 name=${2:-} stat comm
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    # Field 3 (state) follows the ")" that closes the command name.
    stat=${stat##*) }
    [[ ${stat%% *} != Z ]] || return 1
    if [[ -n $name ]]; then
        comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
        [[ $comm == "$name" ]] || return 1
    fi
    return 0
}

# True when the working directory of PID is DIR (physical paths). redis-server chdirs to its
# configured dir and postgres to its data directory, which hold their pidfiles: a pid from a
# stale pidfile that now belongs to another server of the same name fails this. When
# /proc/PID/cwd cannot be read (another user's process: root without CAP_SYS_PTRACE, as in a
# container, looking at the postgres user's server) the name check has to do: refusing would
# leave our own server running, and root can still signal it.
ferry_pid_in_dir() {
    local pid=$1 dir=$2 cwd
    dir=$(cd -P -- "$dir" 2>/dev/null && pwd -P) || return 1
    cwd=$(readlink -- "/proc/$pid/cwd" 2>/dev/null) || return 0
    [[ $cwd == "$dir" ]]
}

# First line of a pidfile if it names a live process called NAME whose working directory is
# the pidfile's directory (or DIR when given); empty output otherwise.
ferry_pidfile_pid() {
    local file=$1 name=$2 dir=${3:-} pid
    [[ -n $dir ]] || dir=$(dirname -- "$file")
    [[ -r $file && -f $file ]] || return 0
    read -r pid <"$file" || true
    if ferry_pid_alive "$pid" "$name" && ferry_pid_in_dir "$pid" "$dir"; then echo "$pid"; fi
}

# Wait until PID (called NAME) is gone; SIGKILL it after DEADLINE seconds. Returns 0 once gone.
ferry_wait_exit() {
    local pid=$1 name=$2 deadline_s=${3:-$FERRY_STOP_DEADLINE_S} end
    end=$(($(ferry_now_ms) + deadline_s * 1000))
    while ferry_pid_alive "$pid" "$name"; do
        if (($(ferry_now_ms) >= end)); then
            ferry_msg "$name (pid $pid) did not exit within ${deadline_s}s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            end=$(($(ferry_now_ms) + 5000))
            while ferry_pid_alive "$pid" "$name"; do
                (($(ferry_now_ms) < end)) || { ferry_msg "pid $pid survives SIGKILL"; return 1; }
                sleep 0.02
            done
            return 0
        fi
        sleep 0.02
    done
    return 0
}

# --- ports ------------------------------------------------------------------------------------

# Print a loopback TCP port that nothing uses right now. Ports come from below the kernel's
# ephemeral range (so outgoing connections never sit on them) at a random offset, so two runs
# at once rarely even try the same one; the caller still retries when bind loses a race.
# Args: ports to avoid.
ferry_pick_port() {
    local eph_lo=32768 eph_hi=60999 lo hi p i avoid
    if [[ -r /proc/sys/net/ipv4/ip_local_port_range ]]; then
        read -r eph_lo eph_hi </proc/sys/net/ipv4/ip_local_port_range || true
    fi
    if ((eph_lo > 12000)); then
        lo=10000 hi=$((eph_lo - 1))
    else
        lo=$((eph_hi + 1)) hi=65000
    fi
    ((hi > lo)) || ferry_die "no port range outside the ephemeral range $eph_lo-$eph_hi"
    for ((i = 0; i < 200; i++)); do
        p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1)))
        for avoid in "$@"; do [[ $p == "$avoid" ]] && continue 2; done
        # Any TCP socket (listening, connected, TIME_WAIT) on that local port makes bind risky.
        if [[ -z $(ss -Htan "sport = :$p" 2>/dev/null) ]]; then
            echo "$p"
            return 0
        fi
    done
    ferry_die "could not find a free TCP port in $lo-$hi"
}

# --- redis ------------------------------------------------------------------------------------

# redis-cli bounded in time: a stopped (SIGSTOP) or wedged server must not hang the fixture.
ferry_redis_cli() { timeout "${FERRY_CLI_TIMEOUT:-3}" redis-cli "$@"; }

# Wait until the redis-server configured with DIR answers CONFIG GET dir with exactly DIR (so
# we know it is ours, not some other server that won a port race). CLI args reach it.
# Returns 0 ready, 2 the port was taken (log says so), 1 any other failure or the deadline.
ferry_redis_wait_ready() {
    local dir=$1 log=$2 deadline_s=$3 end out pid=
    shift 3
    # Redis reports its working directory as getcwd() gives it: compare physical paths.
    dir=$(cd -- "$dir" && pwd -P) || return 1
    end=$(($(ferry_now_ms) + deadline_s * 1000))
    FERRY_LAUNCH_PID=
    while :; do
        # Every line the daemon logs starts with its pid ("1234:M ..."): if that process is
        # gone before it answered, start-up failed; no need to wait for the deadline. Checked
        # before pinging so a foreign listener that took the port cannot stall us.
        if [[ -z $pid && -r $log ]]; then
            pid=$(sed -n 's/^\([0-9][0-9]*\):[A-Z] .*/\1/p;T;q' "$log")
            FERRY_LAUNCH_PID=$pid
        fi
        if [[ -n $pid ]] && ! ferry_pid_alive "$pid" redis-server; then
            if grep -qE 'Address already in use|Failed listening on port' "$log"; then
                return 2
            fi
            ferry_msg "redis-server (pid $pid) exited during start-up"
            return 1
        fi
        out=$(FERRY_CLI_TIMEOUT=1 ferry_redis_cli "$@" config get dir 2>/dev/null || true)
        # Ours; with persistence it must also have finished loading its data (until then
        # it answers data commands with -LOADING). The line must start with "loading:", as
        # INFO also has "async_loading:0".
        if [[ $out == *$'\n'"$dir" ]]; then
            out=$(FERRY_CLI_TIMEOUT=1 ferry_redis_cli "$@" info persistence 2>/dev/null || true)
            if [[ $out == *$'\n'loading:0[$'\r\n']* ]]; then return 0; fi
        fi
        if (($(ferry_now_ms) >= end)); then
            ferry_msg "redis-server in $dir did not answer within ${deadline_s}s"
            return 1
        fi
        sleep 0.02
    done
}

# Start `redis-server CONF` (a daemonizing config whose dir is DIR), and wait for it.
# Returns like ferry_redis_wait_ready. Extra args are the redis-cli args to reach it.
# On failure a server that is alive but never answered is killed, so nothing is left behind.
ferry_redis_launch() {
    local conf=$1 dir=$2 log=$3 pidfile=$4
    shift 4
    rm -f "$pidfile"
    : >"$log"
    # With daemonize the parent exits right after fork; the child reports to the logfile.
    # Config syntax errors come before the logfile is open, so keep stderr too.
    if ! redis-server "$conf" </dev/null >>"$log" 2>&1; then
        ferry_msg "redis-server refused $conf"
        return 1
    fi
    local rc=0
    ferry_redis_wait_ready "$dir" "$log" "$FERRY_START_DEADLINE_S" "$@" || rc=$?
    # Stop finds the server only through its pidfile, which redis-server may have failed to
    # write (disk full, unwritable file) without failing: make sure it names this server.
    if ((rc == 0)) && ! ferry_redis_record_pid "$dir" "$pidfile" "$@"; then rc=1; fi
    if ((rc != 0)) && [[ -n ${FERRY_LAUNCH_PID:-} ]] && ferry_pid_alive "$FERRY_LAUNCH_PID" redis-server; then
        kill -KILL "$FERRY_LAUNCH_PID" 2>/dev/null || true
        ferry_wait_exit "$FERRY_LAUNCH_PID" redis-server 5 || true
    fi
    return "$rc"
}

# After readiness: ask the server its pid (INFO server process_id), check it is a redis-server
# running in DIR, and make PIDFILE name it (writing it when redis-server did not). Sets
# FERRY_LAUNCH_PID so a failure here kills it. Extra args reach the server. Returns 0 or 1.
ferry_redis_record_pid() {
    local dir=$1 pidfile=$2 out pid cur=
    shift 2
    out=$(FERRY_CLI_TIMEOUT=2 ferry_redis_cli "$@" info server 2>/dev/null || true)
    pid=$(sed -n 's/^process_id:\([0-9][0-9]*\).*/\1/p' <<<"$out")
    if [[ -z $pid ]]; then
        ferry_msg "redis-server in $dir did not report its process_id"
        return 1
    fi
    if ! ferry_pid_alive "$pid" redis-server || ! ferry_pid_in_dir "$pid" "$dir"; then
        ferry_msg "process $pid reported by the server in $dir is not a redis-server running there"
        return 1
    fi
    FERRY_LAUNCH_PID=$pid
    if [[ -f $pidfile && -r $pidfile ]]; then read -r cur <"$pidfile" || true; fi
    if [[ $cur != "$pid" ]]; then
        if ! { echo "$pid" >"$pidfile.tmp" && mv -fT -- "$pidfile.tmp" "$pidfile"; } 2>/dev/null; then
            rm -f -- "$pidfile.tmp" 2>/dev/null
            ferry_msg "cannot record the pid $pid of redis-server in $pidfile (disk full? unwritable?); without it the server could not be stopped, so it is killed"
            return 1
        fi
        ferry_msg "redis-server did not write $pidfile; wrote it (pid $pid)"
    fi
    return 0
}

# Stop the redis-server of PIDFILE: SIGTERM (a clean shutdown: no RDB is saved because the
# configs have no save points; an append-only file is flushed), wait, SIGKILL after the
# deadline. Fine when nothing runs.
ferry_redis_stop_pidfile() {
    local pidfile=$1 pid
    pid=$(ferry_pidfile_pid "$pidfile" redis-server)
    if [[ -n $pid ]]; then
        kill -TERM "$pid" 2>/dev/null || true
        ferry_wait_exit "$pid" redis-server || return 1
    fi
    rm -f "$pidfile"
}

# SIGKILL the redis-server of PIDFILE and wait until it is gone (simulated crash).
ferry_redis_kill9_pidfile() {
    local pidfile=$1 pid
    pid=$(ferry_pidfile_pid "$pidfile" redis-server)
    [[ -n $pid ]] || return 0
    kill -KILL "$pid" 2>/dev/null || true
    ferry_wait_exit "$pid" redis-server 5
}

# Write the config of the plain private server: loopback TCP on PORT, a unix socket, no RDB
# snapshots, persistence per FERRY_REDIS_PERSIST, an ACL user with a password that needs
# percent-encoding in URLs. Args: conf dir port unixsock
ferry_redis_write_plain_conf() {
    local conf=$1 dir=$2 port=$3 sock=$4 persist
    case $FERRY_REDIS_PERSIST in
        # The AOF lives in DIR (Redis 7: DIR/appendonlydir), so restarting with the same
        # config (testenv.sh redis-ctl start) loads it back; a tail cut by a crash is
        # loaded up to the last complete command (aof-load-truncated).
        aof) persist=$'appendonly yes\nappendfsync everysec\naof-load-truncated yes' ;;
        none) persist='appendonly no' ;;
        *) ferry_die "FERRY_REDIS_PERSIST must be aof or none, not '$FERRY_REDIS_PERSIST'" ;;
    esac
    cat >"$conf" <<EOF
# Private redis-server written by scripts/lib.sh; restart with: redis-server $conf
port $port
bind 127.0.0.1
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
dir $dir
save ""
$persist
maxmemory-policy noeviction
unixsocket $sock
unixsocketperm 700
user ferry on >secret@pw ~* &* +@all
EOF
}

# Socket path for DIR/redis.sock, or a short one under /tmp when DIR is too deep for sun_path.
# The fallback directory is recorded in DIR/.sockdir so stop can remove it.
ferry_redis_sock_path() {
    local dir=$1 sock=$1/redis.sock tmp
    if ((${#sock} <= FERRY_SUN_PATH_MAX)); then
        echo "$sock"
        return 0
    fi
    tmp=$(mktemp -d /tmp/ferry-sock.XXXXXX) || ferry_die "mktemp failed"
    echo "$tmp" >"$dir/.sockdir"
    echo "$tmp/redis.sock"
}

# Start the plain private redis in RDIR (created by the caller) on a fresh port, retrying
# with another port when bind loses a race. Sets FERRY_REDIS_PORT. Args: rdir sock [avoid...]
ferry_redis_start_plain() {
    local rdir=$1 sock=$2 port try rc
    shift 2
    for ((try = 1; try <= FERRY_PORT_TRIES; try++)); do
        port=$(ferry_pick_port "$@")
        ferry_redis_write_plain_conf "$rdir/redis.conf" "$rdir" "$port" "$sock"
        rc=0
        ferry_redis_launch "$rdir/redis.conf" "$rdir" "$rdir/redis.log" "$rdir/redis.pid" \
            -h 127.0.0.1 -p "$port" || rc=$?
        if ((rc == 0)); then
            # shellcheck disable=SC2034 # result for the caller
            FERRY_REDIS_PORT=$port
            return 0
        fi
        if ((rc != 2)); then
            ferry_log_tail "$rdir/redis.log"
            ferry_redis_stop_pidfile "$rdir/redis.pid" || true
            return 1
        fi
        ferry_msg "port $port was taken before redis-server could bind it; trying another"
    done
    ferry_msg "gave up after $FERRY_PORT_TRIES port collisions"
    return 1
}

# Remove the /tmp socket directory recorded by ferry_redis_sock_path, if any.
ferry_redis_cleanup_sockdir() {
    local dir=$1 tmp
    [[ -r $dir/.sockdir ]] || return 0
    read -r tmp <"$dir/.sockdir" || true
    if [[ $tmp == /tmp/ferry-sock.* ]]; then rm -rf -- "$tmp"; fi
    rm -f -- "$dir/.sockdir"
}

# --- directories ------------------------------------------------------------------------------

# Marker that says "this directory was made by our scripts and may be wiped".
FERRY_MARKER=.ferry-private-servers

# Make DIR empty and ours: refuse to wipe a non-empty directory we did not create.
ferry_prepare_dir() {
    local dir=$1
    case $dir in
        / | /tmp | /root | /home | /work | "$HOME") ferry_die "refusing to use $dir as a server directory" ;;
    esac
    if [[ -d $dir ]] && [[ -n $(ls -A "$dir") ]]; then
        [[ -e $dir/$FERRY_MARKER ]] ||
            ferry_die "$dir exists, is not empty and was not made by $FERRY_PROG; refusing to wipe it"
        rm -rf -- "$dir"
    fi
    mkdir -p -- "$dir" || ferry_die "cannot create $dir"
    : >"$dir/$FERRY_MARKER"
}

# Where the servers of DIR live. Paths of our servers go into redis.conf, pg_ctl -o (run by
# /bin/sh), the env file and URLs, which cannot all carry whitespace, quotes, globs or shell
# characters. When DIR (a build directory: "/home/me/my repo/build") holds any, the servers
# live in a mktemp directory under /tmp instead, recorded in DIR/.serverdir and removed by
# ferry_server_dir_remove (as ferry_redis_sock_path does for long socket paths).
# ferry_server_dir_make DIR: DIR was just prepared; print the directory to use.
ferry_server_dir_make() {
    local dir=$1 sdir
    if ferry_path_plain "$dir"; then
        echo "$dir"
        return 0
    fi
    sdir=$(mktemp -d /tmp/ferry-testenv.XXXXXX) || ferry_die "mktemp in /tmp failed"
    : >"$sdir/$FERRY_MARKER"
    echo "$sdir" >"$dir/.serverdir"
    ferry_msg "'$dir' contains $(ferry_path_bad_char "$dir"); the servers live in $sdir"
    echo "$sdir"
}

# The directory ferry_server_dir_make chose for DIR (DIR itself when none is recorded).
ferry_server_dir() {
    local dir=$1 sdir=
    if [[ -r $dir/.serverdir ]]; then read -r sdir <"$dir/.serverdir" || true; fi
    if [[ $sdir == /tmp/ferry-testenv.* && -e $sdir/$FERRY_MARKER ]]; then echo "$sdir"; else echo "$dir"; fi
}

# Remove the /tmp server directory of DIR, if any, once its servers are stopped; its logs are
# kept in DIR under the same relative paths.
ferry_server_dir_remove() {
    local dir=$1 sdir f
    sdir=$(ferry_server_dir "$dir")
    if [[ $sdir != "$dir" ]]; then
        while IFS= read -r -d '' f; do
            if mkdir -p -- "$dir/$(dirname -- "$f")"; then cp -p -- "$sdir/$f" "$dir/$f" 2>/dev/null || true; fi
        done < <(cd -- "$sdir" && find . -name '*.log*' -type f -print0 2>/dev/null)
        rm -rf -- "$sdir"
    fi
    rm -f -- "$dir/.serverdir"
}

# Write KEY=VALUE lines from stdin to FILE atomically, so a reader never sees half a file.
ferry_write_env() {
    local file=$1
    cat >"$file.tmp" && mv -f -- "$file.tmp" "$file"
}

# --- postgresql -------------------------------------------------------------------------------

# Directory holding initdb/pg_ctl/postgres/psql (Debian keeps them off PATH).
ferry_pg_bindir() {
    local d
    if command -v pg_config >/dev/null 2>&1; then
        d=$(pg_config --bindir 2>/dev/null || true)
        if [[ -x $d/initdb && -x $d/pg_ctl ]]; then echo "$d"; return 0; fi
    fi
    local -a dirs
    mapfile -t dirs < <(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r)
    for d in "${dirs[@]}"; do
        if [[ -x $d/initdb && -x $d/pg_ctl ]]; then echo "$d"; return 0; fi
    done
    d=$(command -v initdb 2>/dev/null || true)
    if [[ -n $d ]]; then dirname "$d"; return 0; fi
    return 1
}

# Run a PostgreSQL server program as the cluster owner: postgres refuses to run as root, so
# root runs it as the `postgres` system user (made by the postgresql package).
ferry_pg_as_owner() {
    if ((EUID == 0)); then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# Start a private cluster in PGDIR (created by the caller): trust auth on loopback TCP for the
# superuser `ferry`, a database `ferry`, durability off (test data only). Sets FERRY_PG_PORT,
# and FERRY_PG_DIR to the directory really used (see below).
# As root the server runs as `postgres`, which must reach PGDIR. A checkout under /root (mode
# 700 on Debian) is out of its reach: then the cluster lives in a private directory under
# /tmp, PGDIR becomes a symlink to it, and ferry_pg_stop removes it (keeping the logs).
# Args: pgdir [ports to avoid...]
ferry_pg_start() {
    local pgdir=$1 bindir port try sockopt real
    shift
    # shellcheck disable=SC2034 # result for the caller
    FERRY_PG_DIR=$pgdir
    bindir=$(ferry_pg_bindir) || { ferry_msg "PostgreSQL server binaries not found (install postgresql)"; return 1; }
    if ((EUID == 0)); then
        id postgres >/dev/null 2>&1 || { ferry_msg "running as root needs the 'postgres' user"; return 1; }
        chown postgres: "$pgdir"
        if ! runuser -u postgres -- test -w "$pgdir"; then
            real=$(mktemp -d /tmp/ferry-pg.XXXXXX) || { ferry_msg "cannot make a directory in /tmp"; return 1; }
            chown postgres: "$real"
            if ! runuser -u postgres -- test -w "$real"; then
                ferry_msg "user postgres cannot write $pgdir nor $real"
                rm -rf -- "$real"
                return 1
            fi
            if ! { rmdir -- "$pgdir" && ln -s -- "$real" "$pgdir"; }; then
                ferry_msg "cannot replace $pgdir by a symlink to $real"
                rm -rf -- "$real"
                return 1
            fi
            pgdir=$real
            # shellcheck disable=SC2034 # result for the caller
            FERRY_PG_DIR=$real
        fi
    fi
    if ! ferry_pg_as_owner "$bindir/initdb" -D "$pgdir/data" -U ferry --auth=trust -E UTF8 \
        --locale=C --no-sync >"$pgdir/initdb.log" 2>&1; then
        ferry_msg "initdb failed"
        ferry_log_tail "$pgdir/initdb.log"
        return 1
    fi
    # Unix socket in PGDIR when the path fits sun_path (".s.PGSQL.NNNNN" is 15 more), else none.
    # pg_ctl passes -o through /bin/sh: quote the directory.
    if ((${#pgdir} + 16 <= FERRY_SUN_PATH_MAX)); then
        sockopt="-k $(ferry_sh_quote "$pgdir")"
    else
        sockopt="-k ''"
    fi
    for ((try = 1; try <= FERRY_PORT_TRIES; try++)); do
        port=$(ferry_pick_port "$@")
        if ferry_pg_as_owner "$bindir/pg_ctl" -D "$pgdir/data" -l "$pgdir/postgres.log" -w \
            -t "$FERRY_START_DEADLINE_S" -o "-p $port -c listen_addresses=127.0.0.1 $sockopt \
-c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >"$pgdir/pg_ctl.log" 2>&1; then
            # shellcheck disable=SC2034 # result for the caller
            FERRY_PG_PORT=$port
            break
        fi
        if grep -qE 'could not bind|Address already in use' "$pgdir/postgres.log" 2>/dev/null; then
            ferry_msg "port $port was taken before postgres could bind it; trying another"
            mv -f "$pgdir/postgres.log" "$pgdir/postgres.log.port$port"
            continue
        fi
        ferry_msg "PostgreSQL did not start"
        ferry_log_tail "$pgdir/pg_ctl.log"
        ferry_log_tail "$pgdir/postgres.log"
        return 1
    done
    [[ -n ${FERRY_PG_PORT:-} ]] || { ferry_msg "gave up after $FERRY_PORT_TRIES port collisions"; return 1; }
    if ! timeout 20 "$bindir/psql" -X -q -h 127.0.0.1 -p "$FERRY_PG_PORT" -U ferry -d postgres \
        -c 'CREATE DATABASE ferry' >"$pgdir/createdb.log" 2>&1; then
        ferry_msg "CREATE DATABASE failed"
        ferry_log_tail "$pgdir/createdb.log"
        return 1
    fi
}

# Stop the cluster in PGDIR (immediate: test data needs no checkpoint). Fine when none runs.
# A PGDIR that ferry_pg_start made a symlink to /tmp/ferry-pg.* becomes a plain directory
# again, holding the logs, and the cluster's files are removed.
ferry_pg_stop() {
    local pgdir=$1 pid rc=0 real
    if [[ -r $pgdir/data/postmaster.pid ]]; then
        pid=$(ferry_pidfile_pid "$pgdir/data/postmaster.pid" postgres)
        if [[ -n $pid ]]; then
            # SIGQUIT is pg_ctl's "immediate" mode; sent directly so stop needs no pg_ctl or runuser.
            kill -QUIT "$pid" 2>/dev/null || true
            ferry_wait_exit "$pid" postgres || rc=1
        fi
    fi
    if ((rc == 0)) && [[ -L $pgdir ]]; then
        real=$(readlink -- "$pgdir")
        if [[ $real == /tmp/ferry-pg.* ]]; then
            rm -f -- "$pgdir"
            mkdir -p -- "$pgdir"
            cp -p -- "$real"/*.log "$real"/*.log.port* "$pgdir"/ 2>/dev/null || true
            rm -rf -- "$real"
        fi
    fi
    return "$rc"
}
