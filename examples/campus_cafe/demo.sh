#!/usr/bin/env bash
# The CampusCafe mobile order, end to end (examples/campus_cafe, docs/sagas.md):
# four databases on a throwaway cluster (cafe_orders runs the saga; cafe_stock, cafe_payment
# and cafe_notify are services with pg_once inboxes and outboxes), six once-relay processes
# moving commands and replies between them, and a stream of orders with injected failures:
# sold out, card declined, notification outage, duplicate replies, an out-of-order reply and
# a failing compensation. Ends with the outcome per scenario and the invariants; exits
# non-zero when one is broken.
#   examples/campus_cafe/demo.sh [ORDERS]   (default 200; scripts/demo builds first, then runs this)
#   CAFE_VIA=nats: the databases connected only through NATS JetStream (scripts/demo --via nats)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
orders=${1:-200}
[[ "$orders" =~ ^[0-9]+$ ]] && [ "$orders" -ge 10 ] || { echo "usage: scripts/demo [ORDERS >= 10]" >&2; exit 2; }

# (a test passes the build of its server version; scripts/demo the default one)
export ONCE_STAGE_DIR=${ONCE_STAGE_DIR:-$root/build/stage} ONCE_BUILD_DIR=${ONCE_BUILD_DIR:-$root/build}
source "$root/tests/lib/cluster.sh"
source "$root/examples/campus_cafe/cafe.sh"
source "$root/examples/campus_cafe/console.sh"

cleanup() {
    cafe_stop_ticker
    cafe_stop_relays
    cafe_stop_nats
    once_cluster_stop
}
trap cleanup EXIT

echo "== starting a throwaway PostgreSQL cluster"
once_cluster_start shared_preload_libraries=pg_once
CAFE_RELAY_LOG_DIR=$ONCE_CLUSTER_DIR
echo "== creating cafe_orders, cafe_stock, cafe_payment, cafe_notify (each with pg_once)"
cafe_setup
echo
echo "The order saga (once.saga_diagram('campus_cafe_order')):"
cafe_psql cafe_orders -c "SELECT once.saga_diagram('campus_cafe_order')" | sed 's/^/    /'
echo

if [ "$CAFE_VIA" = nats ]; then
    echo "== starting NATS with JetStream; the databases share nothing else"
    cafe_start_nats
    echo "== starting eight relays: each database's outbox to the stream CAFE (--sink nats://),"
    echo "   and from it into each database's inbox (--source nats://, a consumer per database)"
else
    echo "== starting six relays (once-relay, postgresql:// sink into the target's inbox)"
fi
cafe_start_relays
if [ -n "$CAFE_STANDIN" ]; then
    echo "   ** once-relay is not built here: using the STAND-IN relay (a shell loop calling"
    echo "   ** once.claim / once.deliver / once.ack, examples/campus_cafe/cafe.sh) and a stand-in"
    echo "   ** saga ticker (SELECT once.saga_tick() every 200 ms). Slower; same guarantees."
fi

echo "== placing $orders orders (scenarios: ${CAFE_SCENARIOS[*]})"
start=$SECONDS
batch=$(( orders / 4 ))
placed=0
while [ $placed -lt "$orders" ]; do
    n=$(( orders - placed < batch ? orders - placed : batch ))
    cafe_place_orders "$n" "demo-b$placed"
    placed=$(( placed + n ))
    echo "  placed $placed: $(cafe_progress)"
done
echo "== waiting for every saga to settle"
cafe_wait_settled 300
echo "  settled after $((SECONDS - start))s: $(cafe_progress)"
echo
echo "Outcomes per scenario (before anyone acts):"
outcomes=$(cafe_outcomes)
echo "$outcomes"
echo
echo "A failed saga waits for a person. Why they stopped:"
cafe_psql cafe_orders -c "SELECT '  ' || saga_id || ': ' || last_error FROM once.sagas WHERE status = 'failed' ORDER BY saga_id LIMIT 3"
echo "== on call: cancelling the failed orders (once.saga_abort)"
echo "  aborted $(cafe_on_call)"
cafe_wait_settled 120
echo "  $(cafe_progress)"
echo
echo "Example history (once.saga_history) of a card-declined order:"
cafe_psql cafe_orders -P footer=off -c "\pset format aligned" -c "\pset tuples_only off" -c "
    SELECT to_char(at, 'HH24:MI:SS.MS') AS at, from_status AS from, to_status AS to, event, reason
      FROM once.saga_history WHERE saga_id = (SELECT order_id FROM cafe.orders WHERE scenario = 'card_declined' LIMIT 1)
     ORDER BY id"
echo
status=0
if grep -q UNEXPECTED <<<"$outcomes"; then
    echo "A scenario ended in an unexpected state (see the table above)." >&2
    status=1
fi
cafe_check_invariants || status=1
if [ $status -eq 0 ]; then
    echo "All invariants hold."
else
    echo "AN INVARIANT IS BROKEN (relay logs in $ONCE_CLUSTER_DIR)" >&2
fi
cafe_console || status=1
exit $status
