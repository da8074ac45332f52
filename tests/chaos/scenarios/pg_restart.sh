# PostgreSQL immediate restart (a crash: no checkpoint, WAL replay at start) during the load,
# 10 in a 10-minute run: producers see failed transactions (their outcome is unknown, never
# counted as lost), relays reconnect with backoff, one to JetStream and one to the inbox in
# the same cluster (the inbox restarts with it).

pgr_start() {
    case $1 in
        nats) start_relay nats --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=CHAOS&subject_prefix=once.&create_stream=1" \
                  --topics 'chaos.n.>' --lease 2s --batch 200 --poll-interval 100ms --reconnect-max 1s ;;
        inbox) start_relay inbox --db "$SRC_DB" --sink "$DST_URI&source=src" \
                  --topics 'chaos.p.>' --lease 2s --batch 200 --poll-interval 100ms --reconnect-max 1s ;;
    esac
}
pg_up() { psql -X -At -d src -c "SELECT 1" >/dev/null; }
pgr_restart() {
    once_as_server_user pg_ctl stop -D "$ONCE_CLUSTER_DIR/data" -m immediate -w >/dev/null
    chaos_fault "PostgreSQL immediate restart"
    once_as_server_user pg_ctl start -w -t 60 -D "$ONCE_CLUSTER_DIR/data" -l "$ONCE_CLUSTER_DIR/server.log" \
        -o "-c listen_addresses='' -c unix_socket_directories='$ONCE_CLUSTER_DIR' -c port=5432 -c max_connections=200" >/dev/null
    once_wait_for "PostgreSQL accepting connections" 60 pg_up || fail "PostgreSQL did not come back"
}

scenario_main() {
    start_postgres
    start_nats
    CHAOS_TOPICS=(chaos.n.orders chaos.n.stock chaos.p.orders chaos.p.mail)
    pgr_start nats; pgr_start inbox
    CHAOS_COLLECTORS=(chaos_collect_inbox "chaos_collect_stream 127.0.0.1:$NATS_PORT CHAOS")
    chaos_load "$SRC_DB"
    local period=$(( CHAOS_SECONDS / 10 )); [ $CHAOS_LONG = 1 ] || period=6
    chaos_during_load pgr_restart "$period"
    chaos_finish 180
}
