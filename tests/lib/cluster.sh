# Throwaway PostgreSQL clusters for tests, benchmarks and the demo. Source this file, then:
#   once_cluster_start [postgres -c options...]   start one; exports PGHOST PGPORT PGUSER
#   once_cluster_stop                             stop it and delete its files
#   once_wait_for "what" SECONDS COMMAND...       poll COMMAND until it succeeds or time runs out
#                                                 (pass a function, not "$(...)": arguments are
#                                                 expanded once, the command runs every time)
# The cluster listens on a Unix socket in its own directory only (no TCP port to collide
# with), runs from the staged server in $ONCE_STAGE_DIR, and as user postgres when the
# caller is root (PostgreSQL refuses to run as root).

: "${ONCE_STAGE_DIR:?ONCE_STAGE_DIR must point to the staged install (build/stage)}"
ONCE_PG_BINDIR="$ONCE_STAGE_DIR$(${PG_CONFIG:-pg_config} --bindir)"
export PATH="$ONCE_PG_BINDIR:$PATH"

once_as_server_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

once_wait_for() {
    local what=$1 seconds=$2
    shift 2
    local deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "timed out after ${seconds}s waiting for: $what" >&2
            return 1
        fi
        sleep 0.05
    done
}

# once_cluster_init DIR: initdb only (used for primaries and for tests that need two clusters).
once_cluster_init() {
    local dir=$1
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    chmod 700 "$dir"
    once_as_server_user initdb -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
        --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
}

# once_cluster_run DIR [options]: start the server of DIR; sets PGHOST/PGPORT/PGUSER.
once_cluster_run() {
    local dir=$1
    shift
    local opts="-c listen_addresses='' -c unix_socket_directories='$dir' -c port=5432"
    opts+=" -c max_connections=200 -c shared_buffers=256MB -c log_min_messages=warning"
    local o
    for o in "$@"; do opts+=" -c $o"; done
    chmod 755 "$dir"   # clients running as another user reach the socket
    once_as_server_user pg_ctl start -w -t 60 -D "$dir/data" -l "$dir/server.log" -o "$opts" \
        >/dev/null || { cat "$dir/server.log" >&2; return 1; }
    export PGHOST=$dir PGPORT=5432 PGUSER=postgres
}

once_cluster_start() {
    ONCE_CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-cluster.XXXXXX")
    export ONCE_CLUSTER_DIR
    once_cluster_init "$ONCE_CLUSTER_DIR"
    once_cluster_run "$ONCE_CLUSTER_DIR" "$@"
}

once_cluster_stop_dir() {
    local dir=$1
    [ -n "$dir" ] && [ -d "$dir/data" ] || return 0
    once_as_server_user pg_ctl stop -D "$dir/data" -m immediate -w >/dev/null 2>&1 || true
    rm -rf "$dir"
}

once_cluster_stop() {
    once_cluster_stop_dir "${ONCE_CLUSTER_DIR:-}"
    ONCE_CLUSTER_DIR=
}
