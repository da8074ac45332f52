# The inbound relay (once-relay --source) under faults: producers in database src, an outbound
# relay to JetStream (stream CHAOS), an inbound relay from it into database dst's inbox, where
# a second handler fails at random (10 % of its runs: the message's transaction rolls back and
# is tried again; max_attempts is high enough that nothing becomes poison). On a schedule, in
# turn: kill -9 of the inbound relay (restarted at once: its fence waits for the deliveries it
# never settled), a PostgreSQL immediate restart (both databases, mid-transaction), and a
# moment of heavier handler failure (50 % for one period). The inbox's own records must show
# every committed message processed once, in order per key.

inbound_source() { echo "nats://127.0.0.1:$NATS_PORT?stream=CHAOS&consumer=dst&filter=once.>&ack_wait=3s"; }
inbound_start() {
    start_relay in --db "host=$PGHOST port=$PGPORT user=postgres dbname=dst" --source "$(inbound_source)" \
        --metrics "127.0.0.1:$INBOUND_METRICS" --max-in-flight 200 --reconnect-max 1s
}
inbound_metric() { curl -sf "http://127.0.0.1:$INBOUND_METRICS/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
pg_up() { psql -X -At -d src -c "SELECT 1" >/dev/null; }
inbound_fault() {
    psql_dst -c "UPDATE chaos_flaky SET rate = 0.1" >/dev/null 2>&1 || true
    case $((INBOUND_TURN++ % 3)) in
        0)
            kill9_relay in
            chaos_fault "inbound relay kill -9"
            inbound_start ;;
        1)
            once_as_server_user pg_ctl stop -D "$ONCE_CLUSTER_DIR/data" -m immediate -w >/dev/null
            chaos_fault "PostgreSQL immediate restart"
            once_as_server_user pg_ctl start -w -t 60 -D "$ONCE_CLUSTER_DIR/data" -l "$ONCE_CLUSTER_DIR/server.log" \
                -o "-c listen_addresses='' -c unix_socket_directories='$ONCE_CLUSTER_DIR' -c port=5432 -c max_connections=200" >/dev/null
            once_wait_for "PostgreSQL accepting connections" 60 pg_up || fail "PostgreSQL did not come back" ;;
        2)
            psql_dst -c "UPDATE chaos_flaky SET rate = 0.5" >/dev/null
            chaos_fault "handler failing 50 % for a period" ;;
    esac
}
# The inbound side is drained when the consumer has delivered everything and holds nothing
# unacknowledged: then the inbox has every message the stream has.
inbound_drained() {
    [ "$(inbound_metric once_inbound_consumer_pending)" = 0 ] && [ "$(inbound_metric once_inbound_consumer_ack_pending)" = 0 ] &&
        [ "$(inbound_metric once_inbound_held)" = 0 ]
}
inbound_after_drain() {
    psql_dst -c "UPDATE chaos_flaky SET rate = 0" >/dev/null
    local t0=$SECONDS
    once_wait_for "inbound relay drained" 180 inbound_drained || chaos_fact "INBOUND NOT DRAINED" "$(curl -sf "http://127.0.0.1:$INBOUND_METRICS/metrics" | grep '^once_inbound' | tr '\n' ' ')"
    chaos_fact "inbound drain after the outbox's" "$((SECONDS - t0)) s"
    chaos_fact "inbound: delivered / duplicates / retries / fences (last run)" \
        "$(inbound_metric once_inbound_delivered_total) / $(inbound_metric once_inbound_duplicates_total) / $(inbound_metric once_inbound_retries_total) / $(inbound_metric once_inbound_fences_total)"
    chaos_fact "poison in dst" "$(psql_dst -c "SELECT count(*) FROM once.inbox_poison")"
}

scenario_main() {
    start_postgres
    start_nats
    INBOUND_METRICS=$(free_port)
    INBOUND_TURN=0
    CHAOS_TOPICS=(chaos.orders chaos.stock)
    start_relay out --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=CHAOS&subject_prefix=once.&create_stream=1" \
        --lease 2s --batch 200 --poll-interval 100ms --reconnect-max 1s
    once_wait_for "stream CHAOS" 30 bash -c "grep -q 'stream CHAOS' '$T/relay-out.log'" || fail "outbound relay did not start"
    psql_dst >/dev/null <<'SQL'
SELECT once.inbox_configure('CHAOS', max_attempts => 100000);
CREATE TABLE chaos_flaky (rate float8 NOT NULL);
INSERT INTO chaos_flaky VALUES (0.1);
CREATE FUNCTION public.flaky(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF random() < (SELECT rate FROM public.chaos_flaky) THEN
    RAISE EXCEPTION 'flaky handler fails %', msg.message_id;
  END IF;
END $$;
SELECT once.subscribe('chaos.>', 'public.flaky(once.inbound)'::regprocedure);
SQL
    inbound_start
    CHAOS_COLLECTORS=(chaos_collect_inbox)
    CHAOS_AFTER_DRAIN=(inbound_after_drain)
    chaos_load "$SRC_DB"
    local period=$(( CHAOS_SECONDS / 30 )); [ $CHAOS_LONG = 1 ] || period=4
    chaos_during_load inbound_fault "$period"
    chaos_finish 180
}
