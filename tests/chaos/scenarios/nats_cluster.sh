# A 3-node NATS cluster with an R3 JetStream stream; the relays get all three URLs. During
# the load the stream's leader is killed (kill -9) and restarted 5 times (2 in the short run);
# then all three nodes stop for an outage (60 s in the long run, 6 s in the short one): the relays back off,
# the outbox grows, and after the restart it drains; the drain rate is reported. The stream is
# read by sequence through its leader (a consumer is served by one replica, which may lag).

NC_NODES=(1 2 3)
nc_start_node() {
    local i=$1 routes="" j
    for j in "${NC_NODES[@]}"; do [ "$j" = "$i" ] || routes+="${routes:+,}nats://127.0.0.1:${NC_CLUSTER[$j]}"; done
    mkdir -p "$T/nats-$i"
    nats-server -js -a 127.0.0.1 -p "${NC_PORT[$i]}" -m "${NC_MON[$i]}" -sd "$T/nats-$i" --server_name "n$i" \
        --cluster_name chaos --cluster "nats://127.0.0.1:${NC_CLUSTER[$i]}" --routes "$routes" >>"$T/nats-$i.log" 2>&1 &
    NC_PID[$i]=$!
    BG_PIDS+=($!)
}
nc_kill_node() { kill -9 "${NC_PID[$1]}" 2>/dev/null || true; wait "${NC_PID[$1]}" 2>/dev/null || true; }
nc_healthy() { local i; for i in "${NC_NODES[@]}"; do curl -sf "http://127.0.0.1:${NC_MON[$i]}/healthz" >/dev/null || return 1; done; }
nc_leader() {
    local i l
    for i in "${NC_NODES[@]}"; do
        l=$(curl -sf "http://127.0.0.1:${NC_MON[$i]}/jsz?streams=true" 2>/dev/null |
            jq -r '[.account_details[]?.stream_detail[]? | select(.name == "CHAOS") | .cluster.leader // empty][0] // empty') || continue
        [ -n "$l" ] && { echo "${l#n}"; return 0; }
    done
    return 1
}
nc_has_leader() { nc_leader >/dev/null; }
nc_stream_ready() { nc_has_leader && python3 "$CHAOS_LIB/nats_stream_dump.py" "127.0.0.1:${NC_PORT[1]}" CHAOS probe --timeout 5 >/dev/null; }

nc_kill_leader() {
    local l
    l=$(nc_leader) || return 0
    nc_kill_node "$l"
    chaos_fault "stream leader kill -9"
    nc_start_node "$l"
    once_wait_for "cluster healthy after leader kill" 180 nc_healthy || fail "NATS node $l did not come back"
}

nc_outage() {
    local i t0 backlog before
    before=$(psql_src -c "SELECT count(*) FROM once.outbox")
    for i in "${NC_NODES[@]}"; do nc_kill_node "$i"; done
    chaos_fault "NATS outage (all nodes) ${NC_OUTAGE}s"
    local until=$((SECONDS + NC_OUTAGE)); while (( SECONDS < until )); do sleep 0.5; done
    backlog=$(psql_src -c "SELECT count(*) FROM once.outbox")
    for i in "${NC_NODES[@]}"; do nc_start_node "$i"; done
    t0=$(date +%s.%N)
    once_wait_for "cluster healthy after the outage" 180 nc_healthy || fail "NATS cluster did not come back"
    nc_back_to() { [ "$(psql_src -c "SELECT count(*) FROM once.outbox")" -le "$1" ]; }
    once_wait_for "backlog drained" 300 nc_back_to "$((before + 200))" || fail "backlog not drained: $(psql_src -c 'SELECT count(*) FROM once.outbox')"
    local secs; secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
    chaos_fact "outage backlog / drained in" "$backlog rows / ${secs} s from the restart (producers still running)"
    chaos_fact "net drain rate after the outage" "$(awk -v n="$((backlog - before))" -v s="$secs" 'BEGIN {printf "%.0f msgs/s", n / (s > 0 ? s : 1)}')"
}

# Each node's own view of the stream at the end (its local store: messages, first and last
# sequence, deleted, the leader it names), kept with the run's records: the verdict reads the
# leader, so a replica that holds less than the others (one stayed behind for good after an
# all-nodes kill -9 of nats-server 2.9.10) is seen only here.
nc_collect_replicas() {
    local i
    for i in "${NC_NODES[@]}"; do
        curl -sf "http://127.0.0.1:${NC_MON[$i]}/jsz?streams=true&config=true" >"$CHAOS_RUN/jsz-n$i.json" 2>/dev/null || true
        chaos_fact "stream CHAOS on n$i" "$(jq -r '[.account_details[]?.stream_detail[]? | select(.name == "CHAOS")][0] // {} |
            "\(.state.messages // "?") messages, seq \(.state.first_seq // "?")-\(.state.last_seq // "?"), \(.state.num_deleted // 0) deleted, leader \(.cluster.leader // "?")"' \
            "$CHAOS_RUN/jsz-n$i.json" 2>/dev/null || echo unknown)"
    done
}
# The verdict reads the stream through its leader (--by-sequence). A read through a consumer,
# as the other scenarios do, is served by whichever replica holds the consumer; this one is
# kept beside it and compared, so a run shows when the two differ.
nc_compare_reads() {
    local leader consumer
    python3 "$CHAOS_LIB/nats_stream_dump.py" "127.0.0.1:${NC_PORT[1]}" CHAOS consumer --timeout 60 \
        >"$CHAOS_RUN/consumer-read.tsv" 2>"$CHAOS_RUN/consumer-read.err" || true
    leader=$(wc -l <"$CHAOS_RUN/effects-nats-CHAOS.tsv")
    consumer=$(wc -l <"$CHAOS_RUN/consumer-read.tsv")
    chaos_fact "stream read: leader / consumer" "$leader / $consumer messages$([ -s "$CHAOS_RUN/consumer-read.err" ] && echo " (consumer read: $(tail -1 "$CHAOS_RUN/consumer-read.err"))")"
}

NC_STEP=0
nc_schedule() {
    NC_STEP=$((NC_STEP + 1))
    if [ "$NC_STEP" -le "$NC_LEADER_KILLS" ]; then nc_kill_leader
    elif [ "$NC_STEP" = $((NC_LEADER_KILLS + 1)) ]; then nc_outage
    fi
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
    # long: 5 leader kills, a 60 s outage; short: 2 kills, a 6 s outage
    NC_OUTAGE=60 NC_LEADER_KILLS=5; [ $CHAOS_LONG = 1 ] || NC_OUTAGE=6 NC_LEADER_KILLS=2
    CHAOS_TOPICS=(chaos.n.orders chaos.n.stock chaos.n.mail)
    local r
    for r in 1 2; do
        start_relay "nats$r" --db "$SRC_DB" --sink "nats://$urls?stream=CHAOS&subject_prefix=once." \
            --lease 5s --batch 200 --poll-interval 100ms --reconnect-max 1s --sink-timeout 5s
    done
    CHAOS_COLLECTORS=(nc_collect_replicas "chaos_collect_stream 127.0.0.1:${NC_PORT[1]} CHAOS --by-sequence" nc_compare_reads)
    chaos_load "$SRC_DB"
    local period=$(( CHAOS_SECONDS / 8 )); [ $CHAOS_LONG = 1 ] || period=1
    chaos_during_load nc_schedule "$period"
    chaos_finish 300
}
