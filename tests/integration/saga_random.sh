#!/usr/bin/env bash
# CampusCafe under fire: many orders through the real relays with random scenarios (declined
# cards, sold out, notification outages, duplicate replies, out-of-order replies, failing
# compensations, lost replies (timeout, resend with the same key), replies delayed past the
# timeout (resend, then a late duplicate), and replies so late that the step times out and is
# compensated before its success arrives) while relays are killed (-9) and restarted.
# Afterwards every saga is final or failed with a reason, and the cross-database invariants hold.
#   SAGA_RANDOM_ORDERS (default 2000); CAFE_TRANSPORT=wal: on the WAL transport (a slot per relay)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${ONCE_BUILD_DIR:=$root/build}"
export ONCE_BUILD_DIR
source "$root/tests/lib/cluster.sh"
source "$root/examples/campus_cafe/cafe.sh"
orders=${SAGA_RANDOM_ORDERS:-2000}

cleanup() { cafe_stop_ticker; cafe_stop_relays; once_cluster_stop; }
trap cleanup EXIT
if [ "${CAFE_TRANSPORT:-table}" = wal ]; then
    once_cluster_start fsync=off shared_preload_libraries=pg_once wal_level=logical
else
    once_cluster_start fsync=off shared_preload_libraries=pg_once
fi
CAFE_RELAY_LOG_DIR=$ONCE_CLUSTER_DIR
cafe_setup
[ "$CAFE_TRANSPORT" = wal ] && cafe_use_wal
# Short timeouts so slow services really cause resends and late replies.
cafe_psql cafe_orders -c "SELECT once.saga_define('campus_cafe_order', \$\${
  \"steps\": [
    {\"name\": \"reserve_stock\", \"action\": {\"topic\": \"stock.reserve\"}, \"compensation\": {\"topic\": \"stock.release\", \"max_attempts\": 20},
     \"timeout\": \"3 seconds\", \"max_attempts\": 3},
    {\"name\": \"capture_payment\", \"action\": {\"topic\": \"payment.capture\"}, \"compensation\": {\"topic\": \"payment.refund\", \"max_attempts\": 20},
     \"timeout\": \"3 seconds\", \"max_attempts\": 3, \"kind\": \"pivot\"},
    {\"name\": \"notify\", \"action\": {\"topic\": \"notify.send\"}, \"timeout\": \"3 seconds\", \"kind\": \"retriable\"}],
  \"reply_to\": \"saga.campus_cafe_order.reply\",
  \"retry\": {\"base\": \"100 ms\", \"cap\": \"1 second\"}}\$\$)" >/dev/null
# late: 4.5 s after a 3 s timeout (one resend first); very late: 12 s, past 3 attempts (9 s)
cafe_psql cafe_stock -c "ALTER DATABASE cafe_stock SET cafe.late_seconds = '4.5'"
cafe_psql cafe_payment -c "ALTER DATABASE cafe_payment SET cafe.late_seconds = '12'"

cafe_start_relays
CAFE_RANDOM=1
CAFE_SCENARIOS=(happy happy happy happy happy happy happy happy card_declined sold_out notify_outage
                duplicates duplicates out_of_order release_fails lost_reply late_reply very_late)

backlog_ok() {
    [ "$(cafe_psql cafe_orders -c "SELECT count(*) < 60 FROM once.sagas WHERE status IN ('running', 'compensating')")" = t ]
}
start=$SECONDS
placed=0 restarts=0
while [ $placed -lt "$orders" ]; do
    n=$(( orders - placed < 60 ? orders - placed : 60 ))
    # keep the backlog bounded (like a shop with a finite queue at the counter), so the
    # timeouts that fire are the injected ones, not queueing delay
    once_wait_for "backlog below 60" 120 backlog_ok
    cafe_place_orders "$n" "r$placed"
    placed=$((placed + n))
    # every few batches a relay crashes (kill -9) or is restarted cleanly
    if [ $((RANDOM % 3)) = 0 ]; then
        i=$((RANDOM % ${#CAFE_RELAY_SPECS[@]}))
        if [ $((RANDOM % 2)) = 0 ]; then cafe_restart_relay "$i" KILL; else cafe_restart_relay "$i" TERM; fi
        restarts=$((restarts + 1))
    fi
    [ $((placed % 300)) = 0 ] && echo "placed $placed ($restarts relay restarts): $(cafe_progress)"
done
cafe_wait_settled 240
echo "settled after $((SECONDS - start))s with $restarts relay restarts: $(cafe_progress)"
echo "failed (out of order and the like): $(cafe_psql cafe_orders -c "SELECT count(*) FROM once.sagas WHERE status = 'failed'")"
cafe_outcomes || true
cafe_on_call >/dev/null
cafe_wait_settled 120
echo "resends: $(cafe_psql cafe_orders -c "SELECT count(*) FROM once.saga_history WHERE event LIKE 'resend%'"),
late replies: $(cafe_psql cafe_orders -c "SELECT count(*) FROM once.saga_history WHERE event LIKE 'late%'"),
duplicates ignored: $(cafe_psql cafe_orders -c "SELECT count(*) FROM once.saga_history WHERE event LIKE 'duplicate%'")"
cafe_check_invariants
stuck=$(cafe_psql cafe_orders -c "SELECT count(*) FROM once.sagas WHERE status NOT IN ('completed', 'compensated')")
[ "$stuck" = 0 ] || { echo "$stuck sagas not finished after on-call" >&2; exit 1; }
if [ "$CAFE_TRANSPORT" = wal ]; then   # every relay streamed its own slot
    slots=$(psql -qAtX -d postgres -c "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'cafe\_%' AND confirmed_flush_lsn IS NOT NULL")
    [ "$slots" = "${#CAFE_RELAY_SPECS[@]}" ] || { echo "WAL transport: $slots slots, want ${#CAFE_RELAY_SPECS[@]}" >&2; exit 1; }
    echo "WAL transport: $slots slots, one per relay"
fi
echo "saga_random: $orders orders, all invariants hold"
