# Sourced by examples/campus_cafe/demo.sh at its end (cluster still running).
# ONCE_DEMO_CONSOLE=1 (scripts/demo --console): start once-console on cafe_orders, print its
# address and a fresh admin password, and keep everything running until Ctrl-C.
# Otherwise: say how to get there.
cafe_console() {
    local bin=$ONCE_BUILD_DIR/daemon/console/once-console
    if [ "${ONCE_DEMO_CONSOLE:-0}" != 1 ]; then
        echo
        echo "To look at this in the web console (once-console, docs/console.md): scripts/demo --console"
        return 0
    fi
    [ -x "$bin" ] || { echo "once-console is not built (scripts/build)" >&2; return 1; }
    local dir=$ONCE_CLUSTER_DIR/console secret port=${ONCE_CONSOLE_PORT:-8086} as_user=()
    [ "$(id -u)" = 0 ] && as_user=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    mkdir -p "$dir"
    cafe_psql cafe_orders -c "DO \$\$ BEGIN CREATE ROLE once_console_demo LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$;
                              GRANT once_console_admin TO once_console_demo" >/dev/null
    secret=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    printf 'admin admin %s\n' "$(printf '%s\n' "$secret" | "$bin" --hash-secret)" >"$dir/users"
    chmod 600 "$dir/users"
    [ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
    # 8086 unless taken
    if ! python3 -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1', $port))" 2>/dev/null; then
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    fi
    "${as_user[@]}" "$bin" --db "host=$PGHOST port=$PGPORT dbname=cafe_orders user=once_console_demo" \
        --credentials "$dir/users" --listen "127.0.0.1:$port" 2>"$dir/console.log" &
    local pid=$!
    console_up() { curl -sf --max-time 1 "http://127.0.0.1:$port/healthz"; }
    once_wait_for "once-console answers" 30 console_up || { cat "$dir/console.log" >&2; return 1; }
    echo
    echo "== once-console: http://127.0.0.1:$port/   user admin, password $secret"
    echo "   (cafe_orders; the relays keep running; Ctrl-C stops everything)"
    trap 'kill $pid 2>/dev/null; exit $status' INT TERM
    wait $pid || true
}
