# Helpers for once-console integration tests: source after tests/lib/cluster.sh, with
# ONCE_BUILD_DIR and ONCE_SOURCE_DIR set.
#   console_setup DIR        a throwaway cluster with tests/console/fixture.sql in database
#                            "console", a login console_login (once_console_admin only), and
#                            DIR/users with user admin (password in $ADMIN_SECRET)
#   console_start DIR [name = value ...]
#                            starts once-console on a free loopback port with DIR/console.conf
#                            (plus the given lines), log in DIR/console.log; sets CONSOLE_PID,
#                            CONSOLE_PORT and CONSOLE_URL and waits for /healthz
#   console_stop             stops it
#   console_login_cookie USER SECRET JAR
#                            logs in with curl (form token and cookie), prints the HTTP status
CONSOLE_BIN="$ONCE_BUILD_DIR/daemon/console/once-console"
CONSOLE_PID=
# The console runs as an unprivileged user (it refuses root): postgres under root.
CONSOLE_AS=()
[ "$(id -u)" = 0 ] && CONSOLE_AS=(setpriv --reuid=postgres --regid=postgres --init-groups --)

console_setup() {
    local dir=$1
    once_cluster_start
    psql -X -q -d postgres -c "CREATE DATABASE console"
    export PGDATABASE=console
    psql -X -q -v ON_ERROR_STOP=1 -f "$ONCE_SOURCE_DIR/tests/console/fixture.sql" >"$dir/fixture.log" 2>&1 ||
        { cat "$dir/fixture.log" >&2; return 1; }
    psql -X -q -v ON_ERROR_STOP=1 -c "CREATE ROLE console_login LOGIN; GRANT once_console_admin TO console_login"
    ADMIN_SECRET=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
    printf 'admin admin %s\n' "$(printf '%s\n' "$ADMIN_SECRET" | "$CONSOLE_BIN" --hash-secret)" >"$dir/users"
    chmod 600 "$dir/users"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir/users"
    return 0
}

console_healthy() { curl -sf --max-time 2 "$CONSOLE_URL/healthz" >/dev/null; }

console_start() {
    local dir=$1
    shift
    CONSOLE_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    {
        echo "db = host=$PGHOST port=$PGPORT user=console_login dbname=console"
        echo "listen = 127.0.0.1:$CONSOLE_PORT"
        echo "credentials = $dir/users"
        local line
        for line in "$@"; do echo "$line"; done
    } >"$dir/console.conf"
    chmod 644 "$dir/console.conf"
    "${CONSOLE_AS[@]}" "$CONSOLE_BIN" --config "$dir/console.conf" >"$dir/console.log" 2>&1 &
    CONSOLE_PID=$!
    CONSOLE_URL="http://127.0.0.1:$CONSOLE_PORT"
    once_wait_for "once-console answers" 30 console_healthy
}

console_stop() {
    if [ -n "$CONSOLE_PID" ]; then
        kill "$CONSOLE_PID" 2>/dev/null && wait "$CONSOLE_PID" 2>/dev/null || true
        CONSOLE_PID=
    fi
}

console_login_cookie() {
    local token
    token=$(curl -sf -c "$3" "$CONSOLE_URL/login" | grep -o 'name=csrf value="[0-9a-f]*"' | head -1 | cut -d'"' -f2)
    curl -s -b "$3" -c "$3" -o /dev/null -w '%{http_code}' --data-urlencode "csrf=$token" \
         --data-urlencode "user=$1" --data-urlencode "secret=$2" "$CONSOLE_URL/login"
}
