#!/usr/bin/env bash
# CampusCafe under fire: many orders through the real relays with random scenarios (declined
# cards, sold out, notification outages, duplicate replies, out-of-order replies, failing
# compensations, services slower than the saga timeout so commands are resent and replies come
# late) while relays are killed (-9) and restarted. Afterwards every saga is final or failed
# with a reason, and the cross-database invariants hold.
#   SAGA_RANDOM_ORDERS (default 2000)
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
once_cluster_start fsync=off
CAFE_RELAY_LOG_DIR=$ONCE_CLUSTER_DIR
cafe_setup
# Short timeouts so slow services really cause resends and late replies.
cafe_psql cafe_orders -c "SELECT once.saga_define('campus_cafe_order', \$\${
  \"steps\": [
    {\"name\": \"reserve_stock\", \"action\": {\"topic\": \"stock.reserve\"}, \"compensation\": {\"topic\": \"stock.release\", \"max_attempts\": 20},
     \"timeout\": \"1 second\", \"max_attempts\": 4},
    {\"name\": \"capture_payment\", \"action\": {\"topic\": \"payment.capture\"}, \"compensation\": {\"topic\": \"payment.refund\", \"max_attempts\": 20},
     \"timeout\": \"1 second\", \"max_attempts\": 4, \"kind\": \"pivot\"},
    {\"name\": \"notify\", \"action\": {\"topic\": \"notify.send\"}, \"timeout\": \"1 second\", \"kind\": \"retriable\"}],
  \"reply_to\": \"saga.campus_cafe_order.reply\",
  \"retry\": {\"base\": \"100 ms\", \"cap\": \"1 second\"}}\$\$)" >/dev/null
cafe_psql cafe_payment -c "ALTER DATABASE cafe_payment SET cafe.slow_seconds = '1.3'"

cafe_start_relays
[ -n "${CAFE_TICKER:-}" ] && cafe_start_ticker
CAFE_RANDOM=1
CAFE_SCENARIOS=(happy happy happy happy happy happy card_declined sold_out notify_outage duplicates
                duplicates out_of_order release_fails slow_payment)

start=$SECONDS
placed=0 restarts=0
while [ $placed -lt "$orders" ]; do
    n=$(( orders - placed < 250 ? orders - placed : 250 ))
    cafe_place_orders "$n" "r$placed"
    placed=$((placed + n))
    # a relay crashes (kill -9) or is restarted cleanly
    i=$((RANDOM % ${#CAFE_RELAY_SPECS[@]}))
    if [ $((RANDOM % 2)) = 0 ]; then cafe_restart_relay "$i" KILL; else cafe_restart_relay "$i" TERM; fi
    restarts=$((restarts + 1))
    echo "placed $placed (relay $i restarted): $(cafe_progress)"
done
cafe_wait_settled 240
echo "settled after $((SECONDS - start))s with $restarts relay restarts: $(cafe_progress)"
echo "failed (out of order and the like): $(cafe_psql cafe_orders -c "SELECT count(*) FROM once.sagas WHERE status = 'failed'")"
cafe_on_call >/dev/null
cafe_wait_settled 120
cafe_outcomes || true
echo "resends: $(cafe_psql cafe_orders -c "SELECT count(*) FROM once.saga_history WHERE event LIKE 'resend%'"),
late replies: $(cafe_psql cafe_orders -c "SELECT count(*) FROM once.saga_history WHERE event LIKE 'late%'"),
duplicates ignored: $(cafe_psql cafe_orders -c "SELECT count(*) FROM once.saga_history WHERE event LIKE 'duplicate%'")"
cafe_check_invariants
stuck=$(cafe_psql cafe_orders -c "SELECT count(*) FROM once.sagas WHERE status NOT IN ('completed', 'compensated')")
[ "$stuck" = 0 ] || { echo "$stuck sagas not finished after on-call" >&2; exit 1; }
echo "saga_random: $orders orders, all invariants hold"
