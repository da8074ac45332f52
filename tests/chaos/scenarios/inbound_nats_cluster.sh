# The inbound relay (once-relay --source) reading an R3 stream of a 3-node NATS cluster while
# its nodes fail: the nats_cluster scenario's cluster, leader kills and all-nodes outage
# (its functions, from nats_cluster.sh), with an outbound relay from src to the stream and an
# inbound relay from it into dst's inbox, both given all three URLs. The consumer is R3 as the
# stream: a killed node may hold its leadership, so pulls and acks fail over with it. The
# verdict is the inbox's records: every committed message processed once, in order per key.

source "$(dirname "${BASH_SOURCE[0]}")/nats_cluster.sh"

inc_metric() { curl -sf "http://127.0.0.1:$INC_METRICS/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
inc_drained() {
    [ "$(inc_metric once_inbound_consumer_pending)" = 0 ] && [ "$(inc_metric once_inbound_consumer_ack_pending)" = 0 ] &&
        [ "$(inc_metric once_inbound_held)" = 0 ]
}
inc_after_drain() {
    local t0=$SECONDS
    once_wait_for "inbound relay drained" 300 inc_drained ||
        chaos_fact "INBOUND NOT DRAINED" "$(curl -sf "http://127.0.0.1:$INC_METRICS/metrics" | grep '^once_inbound' | tr '\n' ' ')"
    chaos_fact "inbound drain after the outbox's" "$((SECONDS - t0)) s"
    chaos_fact "inbound: delivered / duplicates / retries / fences" \
        "$(inc_metric once_inbound_delivered_total) / $(inc_metric once_inbound_duplicates_total) / $(inc_metric once_inbound_retries_total) / $(inc_metric once_inbound_fences_total)"
}

scenario_main() {
    declare -gA NC_PORT NC_MON NC_CLUSTER NC_PID
    local i urls=""
    for i in "${NC_NODES[@]}"; do
        NC_PORT[$i]=$(restartable_port); NC_MON[$i]=$(restartable_port); NC_CLUSTER[$i]=$(restartable_port)
        urls+="${urls:+,}127.0.0.1:${NC_PORT[$i]}"
    done
    for i in "${NC_NODES[@]}"; do nc_start_node "$i"; done
    once_wait_for "3-node NATS cluster" 60 nc_healthy || fail "NATS cluster did not start"
    once_wait_for "stream CHAOS (R3) created" 60 python3 "$CHAOS_LIB/nats_stream_create.py" "127.0.0.1:${NC_PORT[1]}" CHAOS 'once.>' 3 ||
        fail "cannot create the R3 stream"
    once_wait_for "stream leader" 30 nc_has_leader || fail "no stream leader"
    start_postgres
    NC_OUTAGE=60 NC_LEADER_KILLS=5; [ $CHAOS_LONG = 1 ] || NC_OUTAGE=6 NC_LEADER_KILLS=2
    CHAOS_TOPICS=(chaos.n.orders chaos.n.stock chaos.n.mail)
    start_relay out --db "$SRC_DB" --sink "nats://$urls?stream=CHAOS&subject_prefix=once." \
        --lease 5s --batch 200 --poll-interval 100ms --reconnect-max 1s --sink-timeout 5s
    INC_METRICS=$(free_port)
    start_relay in --db "host=$PGHOST port=$PGPORT user=postgres dbname=dst" \
        --source "nats://$urls?stream=CHAOS&consumer=dst&filter=once.>&ack_wait=5s" \
        --metrics "127.0.0.1:$INC_METRICS" --sink-timeout 5s
    CHAOS_COLLECTORS=(chaos_collect_inbox)
    CHAOS_AFTER_DRAIN=(inc_after_drain)
    chaos_load "$SRC_DB"
    local period=$(( CHAOS_SECONDS / 8 )); [ $CHAOS_LONG = 1 ] || period=1
    chaos_during_load nc_schedule "$period"
    chaos_finish 300
}
