# CampusCafe on one throwaway cluster: four databases, the relays between them, fault
# injection, the outcome table and the invariants. Sourced by scripts/demo,
# tests/integration/saga_random.sh and tests/bench/saga.sh (after tests/lib/cluster.sh and
# once_cluster_start). Functions:
#   cafe_setup                      create cafe_orders, cafe_stock, cafe_payment, cafe_notify
#   cafe_start_relays [extra args]  start the six relays (pids in CAFE_RELAY_PIDS)
#   cafe_stop_relays                SIGTERM them (only the ones started here)
#   cafe_restart_relay N            stop relay N (0..5) and start it again
#   cafe_order ID SCENARIO          place one order with the scenario's injected faults
#   cafe_orders_sql N PREFIX        SQL placing N orders with random scenarios (one transaction each)
#   cafe_progress                   one line: sagas per status
#   cafe_wait_settled SECONDS       wait until no saga is running or compensating (prints progress)
#   cafe_on_call                    what the person on call does: abort every failed saga
#   cafe_outcomes                   the table of outcomes per scenario (exit 1 if unexpected)
#   cafe_check_invariants           the four invariants across the databases (exit 1 if broken)

CAFE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CAFE_DBS=(cafe_orders cafe_stock cafe_payment cafe_notify)
CAFE_RELAY_PIDS=()
CAFE_RELAY_SPECS=(
    # name             from         to            topics
    "orders-stock      cafe_orders  cafe_stock    stock.>"
    "orders-payment    cafe_orders  cafe_payment  payment.>"
    "orders-notify     cafe_orders  cafe_notify   notify.>"
    "stock-orders      cafe_stock   cafe_orders   saga.>"
    "payment-orders    cafe_payment cafe_orders   saga.>"
    "notify-orders     cafe_notify  cafe_orders   saga.>"
)

cafe_psql() { local db=$1; shift; psql -qAtX -v ON_ERROR_STOP=1 -d "$db" "$@"; }

cafe_setup() {
    local db
    for db in "${CAFE_DBS[@]}"; do
        psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $db" >/dev/null
        cafe_psql "$db" -c "CREATE EXTENSION pg_once" >/dev/null
    done
    for db in cafe_stock cafe_payment cafe_notify; do
        cafe_psql "$db" -f "$CAFE_DIR/common.sql" >/dev/null
    done
    cafe_psql cafe_orders -f "$CAFE_DIR/orders.sql" >/dev/null
    cafe_psql cafe_stock -f "$CAFE_DIR/stock.sql" >/dev/null
    cafe_psql cafe_payment -f "$CAFE_DIR/payment.sql" >/dev/null
    cafe_psql cafe_notify -f "$CAFE_DIR/notify.sql" >/dev/null
    cafe_psql cafe_stock -c "INSERT INTO cafe.items VALUES ('latte', 100000, 100000), ('matcha_cake', 100000, 100000),
                                                            ('onigiri', 100000, 100000), ('limited_pudding', 0, 0)"
}

CAFE_STANDIN=
cafe_relay_bin() {
    local bin=${ONCE_BUILD_DIR:-$ONCE_STAGE_DIR/..}/daemon/once-relay
    [ -z "${CAFE_FORCE_STANDIN:-}" ] && [ -x "$bin" ] && "$bin" --help 2>/dev/null | grep -q -- --saga-tick-interval && echo "$bin"
}

cafe_conninfo() { echo "postgresql:///$1?host=$PGHOST&port=$PGPORT&user=$PGUSER"; }

CAFE_RELAY_LOG_DIR=${CAFE_RELAY_LOG_DIR:-${ONCE_CLUSTER_DIR:-/tmp}}
CAFE_RELAY_EXTRA=()
# CAFE_TRANSPORT=wal: each relay also streams its own slot (cafe_<relay name>, created when
# first needed) with --transport wal; the cluster needs wal_level = logical and the databases
# once.transport = 'wal' (cafe_use_wal).
CAFE_TRANSPORT=${CAFE_TRANSPORT:-table}

cafe_use_wal() {
    local db
    for db in "${CAFE_DBS[@]}"; do psql -qX -v ON_ERROR_STOP=1 -d postgres -c "ALTER DATABASE $db SET once.transport = 'wal'" >/dev/null; done
}

# CAFE_VIA=nats (scripts/demo --via nats): the databases are connected only through NATS.
# Each database runs an outbox relay to the JetStream stream CAFE (subject cafe.<topic>) and
# an inbound relay from it (once-relay --source: a durable consumer per database, filtered to
# the topics its handlers take), instead of the six postgresql:// relays. cafe_start_nats
# starts the server first (CAFE_NATS_PORT, CAFE_NATS_PID).
CAFE_VIA=${CAFE_VIA:-postgresql}
if [ "$CAFE_VIA" = nats ]; then
    CAFE_RELAY_SPECS=(
        # name         database      direction  consumer filter
        "orders-out    cafe_orders   out        -"
        "stock-out     cafe_stock    out        -"
        "payment-out   cafe_payment  out        -"
        "notify-out    cafe_notify   out        -"
        "orders-in     cafe_orders   in         cafe.saga.>"
        "stock-in      cafe_stock    in         cafe.stock.>"
        "payment-in    cafe_payment  in         cafe.payment.>"
        "notify-in     cafe_notify   in         cafe.notify.>"
    )
fi
CAFE_NATS_PID=
cafe_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cafe_start_nats() {
    CAFE_NATS_PORT=$(cafe_free_port)
    CAFE_NATS_MON=$(cafe_free_port)
    mkdir -p "$CAFE_RELAY_LOG_DIR/nats"
    nats-server -js -a 127.0.0.1 -p "$CAFE_NATS_PORT" -m "$CAFE_NATS_MON" -sd "$CAFE_RELAY_LOG_DIR/nats" \
        >"$CAFE_RELAY_LOG_DIR/nats.log" 2>&1 &
    CAFE_NATS_PID=$!
    once_wait_for "nats-server" 20 curl -sf "http://127.0.0.1:$CAFE_NATS_MON/healthz?js-enabled-only=true" >/dev/null
}
cafe_stop_nats() {
    [ -n "$CAFE_NATS_PID" ] || return 0
    kill "$CAFE_NATS_PID" 2>/dev/null || true
    wait "$CAFE_NATS_PID" 2>/dev/null || true
    CAFE_NATS_PID=
}
cafe_stream_exists() {
    curl -sf "http://127.0.0.1:$CAFE_NATS_MON/jsz?streams=1" | grep -q '"name": *"CAFE"'
}
cafe_start_nats_relay() {
    local i=$1 name=$2 db=$3 direction=$4 filter=$5 bin=$6
    local -a as_user=() side
    [ "$(id -u)" = 0 ] && as_user=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    if [ "$direction" = out ]; then
        side=(--sink "nats://127.0.0.1:$CAFE_NATS_PORT?stream=CAFE&subject_prefix=cafe.&create_stream=1"
              --poll-interval 100ms --saga-tick-interval 100ms --lease 5s)
    else
        side=(--source "nats://127.0.0.1:$CAFE_NATS_PORT?stream=CAFE&consumer=$db&filter=$filter&ack_wait=5s")
    fi
    "${as_user[@]}" "$bin" --db "$(cafe_conninfo "$db")" --name "$name" "${side[@]}" \
        --log-level warn "${CAFE_RELAY_EXTRA[@]}" >>"$CAFE_RELAY_LOG_DIR/relay-$name.log" 2>&1 &
    CAFE_RELAY_PIDS[$i]=$!
    # The inbound relays need the stream: the first outbox relay creates it.
    if [ "$direction" = out ] && ! cafe_stream_exists; then
        once_wait_for "stream CAFE" 30 cafe_stream_exists || { echo "the stream CAFE was not created (relay-$name.log)" >&2; return 1; }
    fi
}

cafe_start_relay() {
    local i=$1 name from to topics
    read -r name from to topics <<<"${CAFE_RELAY_SPECS[$i]}"
    local bin
    if [ "$CAFE_VIA" = nats ]; then
        bin=$(cafe_relay_bin) || { echo "CAFE_VIA=nats needs once-relay (scripts/build)" >&2; return 1; }
        cafe_start_nats_relay "$i" "$name" "$from" "$to" "$topics" "$bin"
        return
    fi
    if ! bin=$(cafe_relay_bin); then
        cafe_standin_relay "$name" "$from" "$to" "$topics" >>"$CAFE_RELAY_LOG_DIR/relay-$name.log" 2>&1 &
        CAFE_RELAY_PIDS[$i]=$!
        CAFE_STANDIN=1
        return 0
    fi
    # once-relay refuses to run as root: as root, drop to the server's user (setpriv execs, so
    # the pid is the relay's own and signals reach it directly).
    local -a as_user=() transport=()
    [ "$(id -u)" = 0 ] && as_user=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    if [ "$CAFE_TRANSPORT" = wal ]; then
        transport=(--transport wal --wal-slot "cafe_${name//-/_}")
        if [ ! -e "$CAFE_RELAY_LOG_DIR/slot-$name" ]; then
            "${as_user[@]}" "$bin" --db "$(cafe_conninfo "$from")" "${transport[@]}" --create-wal-slot \
                >>"$CAFE_RELAY_LOG_DIR/relay-$name.log" 2>&1 || { echo "cannot create the slot of relay $name" >&2; return 1; }
            touch "$CAFE_RELAY_LOG_DIR/slot-$name"
        fi
    fi
    "${as_user[@]}" "$bin" --db "$(cafe_conninfo "$from")" --sink "$(cafe_conninfo "$to")" --name "$name" \
        --topics "$topics" --poll-interval 100ms --saga-tick-interval 100ms --lease 5s "${transport[@]}" \
        --log-level warn "${CAFE_RELAY_EXTRA[@]}" >>"$CAFE_RELAY_LOG_DIR/relay-$name.log" 2>&1 &
    CAFE_RELAY_PIDS[$i]=$!
}

# STAND-IN RELAY, used only when build/daemon/once-relay does not exist: the same protocol
# from a shell loop (once.claim in the source, once.deliver in the target, then once.ack /
# once.nack in the source), one batch per round trip, no LISTEN, no saga ticks (see
# cafe_start_ticker). Slower than once-relay, same guarantees: a crash between deliver and
# ack redelivers, and the target's inbox drops the duplicate.
cafe_standin_relay() {
    local name=$1 from=$2 to=$3 topics=$4 rows sql ok failed id topic payload headers
    trap 'exit 0' TERM
    while :; do
        rows=$(psql -qAtX -F $'\t' -d "$from" -c "SELECT id, topic, payload, coalesce(headers, '{}')
                 FROM once.claim('$name', 100, '5 seconds', ARRAY['$topics'])" 2>/dev/null) || { sleep 0.5; continue; }
        if [ -z "$rows" ]; then sleep 0.1; continue; fi
        sql="CREATE TEMP TABLE IF NOT EXISTS standin_ok (id uuid, ok boolean); TRUNCATE standin_ok;"
        while IFS=$'\t' read -r id topic payload headers; do
            sql+="
DO \$standin\$ BEGIN
  PERFORM once.deliver('$name', '$id'::uuid, '$topic', \$p\$$payload\$p\$::jsonb, \$h\$$headers\$h\$::jsonb);
  INSERT INTO standin_ok VALUES ('$id', true);
EXCEPTION WHEN OTHERS THEN INSERT INTO standin_ok VALUES ('$id', false);
END \$standin\$;"
        done <<<"$rows"
        sql+="
SELECT ok, string_agg(id::text, ',') FROM standin_ok GROUP BY ok;"
        local result
        result=$(psql -qAtX -F $'\t' -d "$to" -c "$sql" 2>/dev/null) || continue   # lease expires, redelivered
        ok=$(awk -F'\t' '$1 == "t" { print $2 }' <<<"$result")
        failed=$(awk -F'\t' '$1 == "f" { print $2 }' <<<"$result")
        [ -z "$ok" ] || psql -qAtX -d "$from" -c "SELECT once.ack('$name', string_to_array('$ok', ',')::uuid[])" >/dev/null
        for id in ${failed//,/ }; do
            psql -qAtX -d "$from" -c "SELECT once.nack('$name', '$id', 'handler failed (stand-in relay)', '1 second')" >/dev/null
        done
    done
}

cafe_start_relays() {
    CAFE_RELAY_EXTRA=("$@")
    local i
    for i in "${!CAFE_RELAY_SPECS[@]}"; do cafe_start_relay "$i"; done
    # the stand-in relays do not call once.saga_tick(): a stand-in ticker does
    if [ -n "$CAFE_STANDIN" ] && [ -z "$CAFE_TICKER_PID" ]; then cafe_start_ticker; fi
}

cafe_stop_relay() {
    local i=$1 pid=${CAFE_RELAY_PIDS[$1]:-}
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    CAFE_RELAY_PIDS[$i]=
}

cafe_stop_relays() {
    local i
    for i in "${!CAFE_RELAY_PIDS[@]}"; do cafe_stop_relay "$i"; done
    cafe_stop_ticker
}

# Kill -9 (a crash, not a drain) or a clean restart.
cafe_restart_relay() {
    local i=$1 how=${2:-TERM} pid=${CAFE_RELAY_PIDS[$1]:-}
    if [ -n "$pid" ]; then
        kill "-$how" "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    cafe_start_relay "$i"
}

# Saga ticks: the relay's maintenance timer calls once.saga_tick() on cafe_orders. This
# stand-in ticker is only started when the relay cannot (CAFE_TICKER=1).
CAFE_TICKER_PID=
cafe_start_ticker() {
    ( while :; do psql -qAtX -d cafe_orders -c "SELECT once.saga_tick(1000)" >/dev/null 2>&1 || true; sleep 0.2; done ) &
    CAFE_TICKER_PID=$!
}
cafe_stop_ticker() {
    [ -n "$CAFE_TICKER_PID" ] || return 0
    kill "$CAFE_TICKER_PID" 2>/dev/null || true
    wait "$CAFE_TICKER_PID" 2>/dev/null || true
    CAFE_TICKER_PID=
}

# The faults of a scenario, as SQL for the service databases.
cafe_faults_sql() {
    local id=$1 scenario=$2
    case $scenario in
        notify_outage)  echo "notify|INSERT INTO cafe.faults VALUES ('$id', 'notify', 3);" ;;
        duplicates)     echo "stock|INSERT INTO cafe.faults VALUES ('$id', 'dup_reserve_stock', 1);"
                        echo "payment|INSERT INTO cafe.faults VALUES ('$id', 'dup_capture_payment', 1);"
                        echo "notify|INSERT INTO cafe.faults VALUES ('$id', 'dup_notify', 1);" ;;
        out_of_order)   echo "stock|INSERT INTO cafe.faults VALUES ('$id', 'early_notify', 1);" ;;
        release_fails)  echo "stock|INSERT INTO cafe.faults VALUES ('$id', 'release', 2);" ;;
        lost_reply)     echo "payment|INSERT INTO cafe.faults VALUES ('$id', 'lose_capture_payment', 1);" ;;
        late_reply)     echo "stock|INSERT INTO cafe.faults VALUES ('$id', 'late_reserve_stock', 1);" ;;
        very_late)      echo "payment|INSERT INTO cafe.faults VALUES ('$id', 'late_capture_payment', 100);" ;;
    esac
}

# The order itself: item, qty, amount, card.
cafe_order_sql() {
    local id=$1 scenario=$2 item=latte card=ok
    case $scenario in
        card_declined|release_fails) card=declined ;;
        sold_out) item=limited_pudding ;;
    esac
    echo "SELECT cafe.place_order('$id', '$item', 1 + (random() * 2)::int, 450, '$card', '$scenario');"
}

CAFE_SCENARIOS=(happy happy happy happy card_declined sold_out notify_outage duplicates out_of_order release_fails)

# Places orders id PREFIX-1..N with scenarios drawn from CAFE_SCENARIOS (deterministic: the
# scenario of order k is CAFE_SCENARIOS[k mod 10]). Faults go in before the order.
cafe_place_orders() {
    local n=$1 prefix=$2 k id scenario line
    local -a orders=() stock=() payment=() notify=()
    for ((k = 1; k <= n; k++)); do
        id="$prefix-$k"
        if [ -n "${CAFE_RANDOM:-}" ]; then
            scenario=${CAFE_SCENARIOS[$((RANDOM % ${#CAFE_SCENARIOS[@]}))]}
        else
            scenario=${CAFE_SCENARIOS[$((k % ${#CAFE_SCENARIOS[@]}))]}
        fi
        orders+=("$(cafe_order_sql "$id" "$scenario")")
        while IFS= read -r line; do
            [ -n "$line" ] || continue
            case ${line%%|*} in
                stock) stock+=("${line#*|}") ;;
                payment) payment+=("${line#*|}") ;;
                notify) notify+=("${line#*|}") ;;
            esac
        done < <(cafe_faults_sql "$id" "$scenario")
    done
    [ ${#stock[@]} -eq 0 ] || printf '%s\n' "${stock[@]}" | cafe_psql cafe_stock >/dev/null
    [ ${#payment[@]} -eq 0 ] || printf '%s\n' "${payment[@]}" | cafe_psql cafe_payment >/dev/null
    [ ${#notify[@]} -eq 0 ] || printf '%s\n' "${notify[@]}" | cafe_psql cafe_notify >/dev/null
    # One transaction per order, like a web request.
    printf '%s\n' "${orders[@]}" | cafe_psql cafe_orders >/dev/null
}

cafe_progress() {
    cafe_psql cafe_orders -c "SELECT string_agg(status || ' ' || n, ', ' ORDER BY status) FROM
        (SELECT status, count(*) AS n FROM once.sagas GROUP BY status) s"
}

cafe_unsettled() {
    [ "$(cafe_psql cafe_orders -c "SELECT count(*) FROM once.sagas WHERE status IN ('running', 'compensating')")" = 0 ]
}

# Waits until every saga is completed, compensated or failed; prints progress every second.
cafe_wait_settled() {
    local seconds=$1 deadline=$((SECONDS + $1)) last=$SECONDS
    until cafe_unsettled; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "timed out after ${seconds}s waiting for the sagas to settle: $(cafe_progress)" >&2
            return 1
        fi
        if [ $((SECONDS - last)) -ge 1 ]; then
            last=$SECONDS
            echo "  ... $(cafe_progress)"
        fi
        sleep 0.1
    done
}

# The person on call: a failed saga needs a decision; here it is "cancel the order".
cafe_on_call() {
    cafe_psql cafe_orders -c "SELECT count(once.saga_abort(saga_id, 'on-call: cancelled after: ' || last_error))
                                FROM once.sagas WHERE status = 'failed'"
}

cafe_outcomes() {
    cafe_psql cafe_orders -P footer=off -c "\pset format aligned" -c "\pset tuples_only off" -c "
        WITH expected(scenario, want) AS (VALUES ('happy', 'completed'), ('card_declined', 'compensated'),
               ('sold_out', 'compensated'), ('notify_outage', 'completed'), ('duplicates', 'completed'),
               ('out_of_order', 'failed'), ('release_fails', 'compensated'), ('lost_reply', 'completed'),
               ('late_reply', 'completed'), ('very_late', 'compensated'))
        SELECT o.scenario, count(*) AS orders,
               count(*) FILTER (WHERE s.status = 'completed') AS completed,
               count(*) FILTER (WHERE s.status = 'compensated') AS compensated,
               count(*) FILTER (WHERE s.status = 'failed') AS failed,
               count(*) FILTER (WHERE s.status IN ('running', 'compensating')) AS in_progress,
               e.want AS expected,
               CASE WHEN count(*) FILTER (WHERE s.status = e.want) = count(*) THEN 'ok' ELSE 'UNEXPECTED' END AS check
          FROM cafe.orders o JOIN once.sagas s ON s.saga_id = o.order_id
          LEFT JOIN expected e ON e.scenario = o.scenario
         GROUP BY o.scenario, e.want ORDER BY o.scenario"
}

# Copies the service tables into cafe_orders (schema check) and checks the invariants there.
cafe_check_invariants() {
    cafe_psql cafe_orders -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS check_ CASCADE; CREATE SCHEMA check_;
        CREATE TABLE check_.reservations (saga_id text, item text, qty int, status text);
        CREATE TABLE check_.items (item text, initial int, available int);
        CREATE TABLE check_.charges (saga_id text, amount numeric, status text);
        CREATE TABLE check_.refunds (saga_id text, amount numeric);
        CREATE TABLE check_.notifications (saga_id text);"
    cafe_psql cafe_stock -c "\copy (SELECT saga_id, item, qty, status FROM cafe.reservations) TO STDOUT" |
        cafe_psql cafe_orders -c "\copy check_.reservations FROM STDIN"
    cafe_psql cafe_stock -c "\copy (SELECT item, initial, available FROM cafe.items) TO STDOUT" |
        cafe_psql cafe_orders -c "\copy check_.items FROM STDIN"
    cafe_psql cafe_payment -c "\copy (SELECT saga_id, amount, status FROM cafe.charges) TO STDOUT" |
        cafe_psql cafe_orders -c "\copy check_.charges FROM STDIN"
    cafe_psql cafe_payment -c "\copy (SELECT saga_id, amount FROM cafe.refunds) TO STDOUT" |
        cafe_psql cafe_orders -c "\copy check_.refunds FROM STDIN"
    cafe_psql cafe_notify -c "\copy (SELECT saga_id FROM cafe.notifications) TO STDOUT" |
        cafe_psql cafe_orders -c "\copy check_.notifications FROM STDIN"
    local report
    report=$(cafe_psql cafe_orders -F '|' -c "
        WITH done AS (SELECT o.order_id, s.status, s.last_error, s.data FROM cafe.orders o JOIN once.sagas s ON s.saga_id = o.order_id),
        checks(name, bad) AS (
          SELECT 'stock reserved - released = stock of completed orders',
                 abs((SELECT coalesce(sum(qty), 0) FROM check_.reservations WHERE status IN ('reserved', 'released'))
                   - (SELECT coalesce(sum(qty), 0) FROM check_.reservations WHERE status = 'released')
                   - (SELECT coalesce(sum(r.qty), 0) FROM check_.reservations r JOIN done d ON d.order_id = r.saga_id
                       WHERE d.status = 'completed'))
               + (SELECT count(*) FROM check_.reservations r JOIN done d ON d.order_id = r.saga_id
                   WHERE (r.status = 'reserved') <> (d.status = 'completed'))
               + (SELECT count(*) FROM check_.items i WHERE i.initial - i.available <>
                   (SELECT coalesce(sum(qty), 0) FROM check_.reservations r WHERE r.item = i.item AND r.status = 'reserved'))
          UNION ALL
          SELECT 'no order charged twice; completed orders charged once, others not at all',
                 (SELECT count(*) FROM (SELECT saga_id FROM check_.charges GROUP BY saga_id HAVING count(*) > 1) x)
               + (SELECT count(*) FROM done d WHERE (d.status = 'completed') <>
                   EXISTS (SELECT 1 FROM check_.charges c WHERE c.saga_id = d.order_id AND c.status = 'captured'))
          UNION ALL
          SELECT 'every refund matches a charge',
                 (SELECT count(*) FROM check_.refunds f LEFT JOIN check_.charges c ON c.saga_id = f.saga_id
                   WHERE c.saga_id IS NULL OR c.amount <> f.amount OR c.status <> 'refunded')
               + (SELECT count(*) FROM (SELECT saga_id FROM check_.refunds GROUP BY saga_id HAVING count(*) > 1) x)
          UNION ALL
          SELECT 'every saga final, or failed with a reason',
                 (SELECT count(*) FROM done WHERE status NOT IN ('completed', 'compensated')
                                             AND NOT (status = 'failed' AND last_error IS NOT NULL))
          UNION ALL
          SELECT 'completed orders notified exactly once, cancelled ones never',
                 (SELECT count(*) FROM done d WHERE (d.status = 'completed') <>
                   EXISTS (SELECT 1 FROM check_.notifications n WHERE n.saga_id = d.order_id))
               + (SELECT count(*) FROM (SELECT saga_id FROM check_.notifications GROUP BY saga_id HAVING count(*) > 1) x))
        SELECT name, bad FROM checks")
    local name bad failed=0
    echo "Invariants:"
    while IFS='|' read -r name bad; do
        if [ "$bad" = 0 ]; then
            printf '  ok      %s\n' "$name"
        else
            printf '  BROKEN  %s (%s violations)\n' "$name" "$bad"
            failed=1
        fi
    done <<<"$report"
    return $failed
}
