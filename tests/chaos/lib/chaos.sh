# The chaos suite's load, fault bookkeeping, receivers and verdict. Sourced by
# tests/chaos/run.sh after tests/integration/lib/relay_common.sh (servers, relays, cleanup).
#
#   chaos_producers_start DB SECONDS   producers (keyed and keyless, send and send_many) over
#                                      CHAOS_TOPICS until SECONDS have passed
#   chaos_during_load FUNCTION PERIOD  call FUNCTION every PERIOD seconds until the producers end
#   chaos_fault KIND                   count one injected fault of KIND
#   chaos_fact NAME VALUE              one row of the result table
#   chaos_finish [DRAIN_SECONDS]       wait for the drain, stop relays, collect the receivers'
#                                      records, print the table and exit with the verdict
# Receivers (each writes its own effect records, read by lib/verdict.py):
#   the inbox of database dst (relay_received, filled by the subscribed handler exactly once),
#   a JetStream stream (chaos_collect_stream), the idempotent HTTP(S) receiver.

# The WAL transport (run.sh --transport wal, CHAOS_TRANSPORT=wal): the server runs with
# wal_level = logical, database src sends with once.transport = 'wal', and every relay streams
# a slot beside its table claims. Relays with the same database, sink and topics are one relay
# group and share one slot (chaos_<hash of the three>, created before the relay starts): one
# of them streams, the others stand by and claim the table. The scenarios stay as they are:
# start_postgres and start_relay do the rest.

CHAOS_LIB=$ONCE_SOURCE_DIR/tests/chaos/lib
CHAOS_RUN=$T/run
mkdir -p "$CHAOS_RUN"
chmod 777 "$CHAOS_RUN"
CHAOS_TOPICS=(chaos.a)
CHAOS_KEYS=${CHAOS_KEYS:-8}          # keys per producer and topic
CHAOS_BATCH_MAX=${CHAOS_BATCH_MAX:-20}
CHAOS_PRODUCERS=${CHAOS_PRODUCERS:-4}
CHAOS_PACE=${CHAOS_PACE:-0.02}       # pause between one producer's transactions (rate, not a wait)
CHAOS_PRODUCER_PIDS=()
CHAOS_LOAD_END=0
declare -A CHAOS_FAULTS=()
CHAOS_COLLECTORS=()                  # functions that write effects-*.tsv at the end
CHAOS_AFTER_DRAIN=()                 # functions that add facts once the outbox drained

chaos_fact() { printf '%s\t%s\n' "$1" "$2" >>"$CHAOS_RUN/facts.txt"; }
chaos_fault() { CHAOS_FAULTS[$1]=$(( ${CHAOS_FAULTS[$1]:-0} + 1 )); }

# One producer: random transactions until the deadline. A transaction whose psql returned OK
# is committed; one that failed is "uncertain" (the connection may have died after the commit
# reached the server) and never counts as lost. Sequence numbers are never reused, and keys
# belong to one producer and topic, so per-key send order is the sequence order.
chaos_producer() {
    local p=$1 db=$2 end=$3 s=1 n kind topic key body sql last keyed
    while (( SECONDS < end )) && [ ! -e "$CHAOS_RUN/stop" ]; do
        n=$((1 + RANDOM % CHAOS_BATCH_MAX))
        topic=${CHAOS_TOPICS[RANDOM % ${#CHAOS_TOPICS[@]}]}
        kind=$((RANDOM % 4))          # 0/2: keyed, 1/3: keyless; 0/1: send, 2/3: send_many
        keyed=$(( kind % 2 == 0 ))
        if [ $keyed = 1 ]; then key="'p$p.$topic.k' || (g % $CHAOS_KEYS)"; else key="NULL::text"; fi
        body="jsonb_build_object('p', $p, 's', g, 'k', $key, 't', extract(epoch FROM clock_timestamp()))"
        last=$((s + n - 1))
        if [ $kind -lt 2 ]; then
            sql="SELECT count(once.send('$topic', $body, $key, jsonb_build_object('key', $key))) FROM generate_series($s, $last) g"
        else
            sql="SELECT count(*) FROM once.send_many('$topic', ARRAY(SELECT $body FROM generate_series($s, $last) g ORDER BY g),
                     CASE WHEN $keyed = 1 THEN ARRAY(SELECT $key FROM generate_series($s, $last) g ORDER BY g) END)"
        fi
        if psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" -c "$sql" >/dev/null 2>>"$CHAOS_RUN/producer-$p.err"; then
            echo "$p $s $last $topic $keyed" >>"$CHAOS_RUN/committed-$p.log"
        else
            echo "$p $s $last $topic $keyed" >>"$CHAOS_RUN/uncertain-$p.log"
        fi
        s=$((last + 1))
        sleep "$CHAOS_PACE"
    done
}

chaos_producers_start() {
    local db=$1 seconds=$2 p
    CHAOS_LOAD_END=$((SECONDS + seconds))
    for ((p = 1; p <= CHAOS_PRODUCERS; p++)); do
        chaos_producer "$p" "$db" "$CHAOS_LOAD_END" &
        CHAOS_PRODUCER_PIDS+=($!)
        BG_PIDS+=($!)
    done
}

chaos_producers_wait() {
    local p
    for p in "${CHAOS_PRODUCER_PIDS[@]}"; do wait "$p" || true; done
    CHAOS_PRODUCER_PIDS=()
}

chaos_producers_running() { (( SECONDS < CHAOS_LOAD_END )) && [ ! -e "$CHAOS_RUN/stop" ]; }
chaos_producers_stop() { touch "$CHAOS_RUN/stop"; }

# chaos_during_load FUNCTION PERIOD: the fault schedule. Bounded by the producers' deadline.
chaos_during_load() {
    local fn=$1 period=$2 next
    next=$((SECONDS + period))
    while chaos_producers_running; do
        # relay memory "at start" is taken once the relays are warm, not at their first breath
        [ -z "${CHAOS_RSS_START:-}" ] && (( SECONDS >= CHAOS_RSS_AT )) && CHAOS_RSS_START=$(chaos_relay_rss_mib)
        if (( SECONDS >= next )); then
            "$fn"
            next=$((SECONDS + period))
        fi
        sleep 0.2   # schedule tick
    done
    # a load that ended before the warm-up point (a short soak reaching its target early)
    # still has a start figure: the relays' memory at the end of the load
    [ -n "${CHAOS_RSS_START:-}" ] || CHAOS_RSS_START=$(chaos_relay_rss_mib)
}

committed_count() { cat "$CHAOS_RUN"/committed-*.log 2>/dev/null | awk '{n += $3 - $2 + 1} END {print n + 0}'; }

# Largest resident set among the live relays, in MiB.
chaos_relay_rss_mib() {
    local p kb max=0
    for p in "${RELAY_PIDS[@]}"; do
        kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null) || continue
        [ -n "$kb" ] && [ "$kb" -gt "$max" ] && max=$kb
    done
    awk -v k="$max" 'BEGIN {printf "%.1f", k / 1024}'
}

chaos_outbox_size() {
    psql -X -At -d "${CHAOS_DB:-$SRC_DB}" -c "SELECT pg_size_pretty(pg_total_relation_size('once.outbox')) || ' (' ||
        (SELECT count(*) FROM once.outbox) || ' rows)'"
}

# The inbox receiver: the handler subscribed in dst (tests/integration/lib/relay_common.sh)
# inserts one row per processed message, inside once.deliver's transaction.
chaos_collect_inbox() {
    psql_dst -c "COPY (SELECT 'inbox', id, payload->>'p', payload->>'s', coalesce(payload->>'k', ''),
                       payload->>'t', extract(epoch FROM at), n FROM relay_received) TO STDOUT" \
        >"$CHAOS_RUN/effects-inbox.tsv"
}

# chaos_collect_stream HOST:PORT STREAM [--by-sequence]: the messages JetStream stored (see
# nats_stream_dump.py for --by-sequence, a read through the stream leader).
chaos_collect_stream() {
    python3 "$CHAOS_LIB/nats_stream_dump.py" "$1" "$2" "nats:$2" --timeout 120 "${@:3}" >"$CHAOS_RUN/effects-nats-$2.tsv"
}

# The idempotent HTTP(S) receiver on a fixed port (restartable). Args: NAME [--cert C --key K].
# Sets RECEIVER_PORT_<NAME>; chaos_receiver_mode NAME MODE... switches its fault mode.
chaos_receiver_start() {
    local name=$1; shift
    local pv="RECEIVER_PORT_$name" port
    port=${!pv:-$(restartable_port)}
    eval "RECEIVER_PORT_$name=$port"
    [ -f "$CHAOS_RUN/mode-$name" ] || echo normal >"$CHAOS_RUN/mode-$name"
    python3 "$CHAOS_LIB/idempotent_receiver.py" --port "$port" --effects "$CHAOS_RUN/effects-http-$name.tsv" \
        --requests "$CHAOS_RUN/requests-$name.log" --mode-file "$CHAOS_RUN/mode-$name" "$@" \
        >>"$CHAOS_RUN/receiver-$name.log" 2>&1 &
    eval "RECEIVER_PID_$name=$!"
    BG_PIDS+=($!)
    # (generous: a restarted receiver first reads every key it recorded, on a loaded machine)
    once_wait_for "receiver $name listening on $port" 60 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" || {
        echo "--- receiver-$name.log (tail)"; tail -20 "$CHAOS_RUN/receiver-$name.log"
        ss -tanp 2>/dev/null | grep ":$port " | head -5
        return 1
    } >&2
}
chaos_receiver_mode() { local name=$1; shift; echo "$*" >"$CHAOS_RUN/mode-$name"; }
chaos_receiver_alive() { local v="RECEIVER_PID_$1"; kill -0 "${!v}" 2>/dev/null; }

chaos_outbox_drained() {
    # WAL transport: first every slot past the end of the load (CHAOS_WAL_TARGET), then the
    # table, which then holds anything a relay wrote back before confirming.
    if [ "$CHAOS_TRANSPORT" = wal ]; then
        [ "$(psql -X -At -d "${CHAOS_DB:-$SRC_DB}" -c "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'chaos\_%'
                 AND (confirmed_flush_lsn IS NULL OR confirmed_flush_lsn < '$CHAOS_WAL_TARGET')" 2>/dev/null)" = 0 ] || return 1
    fi
    [ "$(psql -X -At -d "${CHAOS_DB:-$SRC_DB}" -c "SELECT count(*) FROM once.outbox WHERE dead_at IS NULL" 2>/dev/null)" = 0 ]
}

CHAOS_TRANSPORT=${CHAOS_TRANSPORT:-table}
if [ "$CHAOS_TRANSPORT" = wal ]; then
    eval "chaos_table_$(declare -f start_postgres)"
    start_postgres() {
        chaos_table_start_postgres "$@" wal_level=logical
        # (ALTER SYSTEM: a scenario restarting the server keeps it; a logical slot needs it)
        psql -X -q -d postgres -c "ALTER SYSTEM SET wal_level = 'logical'" -c "ALTER DATABASE src SET once.transport = 'wal'"
    }
    eval "chaos_table_$(declare -f start_relay)"
    start_relay() {
        local name=$1 db= sink= topics= i
        shift
        local args=("$@")
        # An inbound relay (--source) reads a stream, not an outbox: no slot.
        [[ " $* " == *" --source "* ]] && { chaos_table_start_relay "$name" "$@"; return; }
        for ((i = 0; i + 1 < ${#args[@]}; i++)); do
            case ${args[i]} in --db) db=${args[i+1]} ;; --sink) sink=${args[i+1]} ;; --topics) topics=${args[i+1]} ;; esac
        done
        local slot
        slot=chaos_$(printf '%s|%s|%s' "$db" "$sink" "$topics" | md5sum | cut -c1-12)
        if [ ! -e "$CHAOS_RUN/slot-$slot" ]; then
            "${RELAY_AS[@]}" "$RELAY_BIN" --db "$db" --wal-slot "$slot" --create-wal-slot >>"$CHAOS_RUN/slots.log" 2>&1 ||
                fail "cannot create slot $slot: $(tail -1 "$CHAOS_RUN/slots.log")"
            touch "$CHAOS_RUN/slot-$slot"
            chaos_fact "WAL slot $slot" "relay group of $name, topics ${topics:-all}"
        fi
        chaos_table_start_relay "$name" "$@" --transport wal --wal-slot "$slot"
    }
fi

# chaos_finish [DRAIN_SECONDS]: after the load: drain, stop, collect, verdict. Never returns.
chaos_finish() {
    local drain=${1:-180} t0 name rc=0 faults="" k
    chaos_producers_wait
    [ "$CHAOS_TRANSPORT" = wal ] && CHAOS_WAL_TARGET=$(psql -X -At -d "${CHAOS_DB:-$SRC_DB}" -c "SELECT pg_current_wal_lsn()")
    t0=$SECONDS
    once_wait_for "outbox drained" "$drain" chaos_outbox_drained ||
        chaos_fact "NOT DRAINED after ${drain}s" "$(chaos_outbox_size)"
    chaos_fact "drain after the load" "$((SECONDS - t0)) s"
    # (the rest went through the slots; statistics, so a crash restart resets them)
    [ "$CHAOS_TRANSPORT" = wal ] && chaos_fact "rows inserted into once.outbox" "$(psql -X -At -d "${CHAOS_DB:-$SRC_DB}" -c "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relid = 'once.outbox'::regclass") (keyed and send_many messages, write-backs, one per table retry; statistics, reset by a crash restart)"
    for k in "${CHAOS_AFTER_DRAIN[@]}"; do $k; done
    chaos_fact "relay RSS start / end" "${CHAOS_RSS_START:-?} / $(chaos_relay_rss_mib) MiB (largest live relay)"
    chaos_fact "outbox size start / end" "${CHAOS_OUTBOX_START:-?} / $(chaos_outbox_size)"
    chaos_fact "dead letters" "$(psql -X -At -d "${CHAOS_DB:-$SRC_DB}" -c "SELECT count(*) FROM once.outbox WHERE dead_at IS NOT NULL")"
    for k in "${!CHAOS_FAULTS[@]}"; do faults+="${faults:+, }$k × ${CHAOS_FAULTS[$k]}"; done
    chaos_fact "faults injected" "${faults:-none}"
    for name in $(printf '%s\n' "${!RELAY_PID_@}" | sed 's/^RELAY_PID_//'); do
        relay_alive "$name" 2>/dev/null && stop_relay "$name"
    done
    for k in "${CHAOS_COLLECTORS[@]}"; do $k; done
    python3 "$CHAOS_LIB/verdict.py" "$CHAOS_RUN" "$CHAOS_SCENARIO" "$CHAOS_RESULTS/$CHAOS_RESULT_NAME.txt" || rc=$?
    [ -z "${CHAOS_CRITERIA_MISSED:-}" ] || { echo "criteria missed: $CHAOS_CRITERIA_MISSED" >&2; rc=1; }
    [ $rc = 0 ] || { KEEP_TEST_DIR=1; echo "records kept in $CHAOS_RUN" >&2; }
    exit $rc
}

# Call once the servers and relays run: the load starts, the start figures are taken.
chaos_load() {
    local db=$1
    CHAOS_DB=$db
    CHAOS_OUTBOX_START=$(chaos_outbox_size)
    chaos_producers_start "$db" "$CHAOS_SECONDS"
    once_wait_for "first messages committed" 30 bash -c "cat '$CHAOS_RUN'/committed-*.log >/dev/null 2>&1"
    CHAOS_RSS_AT=$((SECONDS + (CHAOS_SECONDS / 4 < 10 ? CHAOS_SECONDS / 4 : 10)))
}
