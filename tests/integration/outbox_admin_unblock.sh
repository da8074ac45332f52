#!/usr/bin/env bash
# One role's message can hold back another's messages of the same key: a deliver_at years
# ahead, or a topic no relay serves (issue 20, finding 4). 0.2 gave the admin no way out:
# once.redrive and once.discard act on dead letters only, and once_admin cannot delete outbox
# rows. Now an admin (a role with once_admin, not a superuser) can make any delayed or retrying
# message due now (once.expedite) or remove any message (once.cancel), and once.blocked_keys
# shows a head nobody claims (reason 'unclaimed').
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
once_cluster_start fsync=off
trap 'once_cluster_stop' EXIT
fails=0
check() { if [ "$2" = "$3" ]; then echo "ok - $1"; else echo "not ok - $1: got '$2', want '$3'"; fails=$((fails + 1)); fi; }
sql() { psql -qtAX -v ON_ERROR_STOP=1 -d postgres "$@"; }
as() { local role=$1; shift; sql -c "SET ROLE $role" -c "$@"; }

sql >/dev/null <<'SQL'
CREATE EXTENSION pg_once;
CREATE ROLE bob IN ROLE once_producer;
CREATE ROLE alice IN ROLE once_producer;
CREATE ROLE ops IN ROLE once_admin;
CREATE ROLE relay IN ROLE once_relay;
SQL
# Bob's message holds order-42 for ten years; Alice's later message of the key waits behind it.
bob=$(as bob "SELECT once.send('orders.note', '{\"by\": \"bob\"}', key => 'order-42', deliver_at => now() + interval '3650 days')")
alice=$(as alice "SELECT once.send('orders.paid', '{\"by\": \"alice\"}', key => 'order-42')")
check "Alice's message waits behind Bob's delayed one" "$(as relay "SELECT count(*) FROM once.claim('r', 10)")" 0
check "blocked_keys says why" "$(as ops "SELECT reason || ' ' || held_message_id || ' ' || waiting FROM once.blocked_keys WHERE key = 'order-42'")" "delayed $bob 1"
check "the admin expedites Bob's message" "$(as ops "SELECT once.expedite(ARRAY['$bob'::uuid])")" 1
check "... which a relay now claims" "$(as relay "SELECT id FROM once.claim('r', 10)")" "$bob"
as relay "SELECT once.ack('r', ARRAY['$bob'::uuid])" >/dev/null
check "... and after its ack Alice's message follows" "$(as relay "SELECT id FROM once.claim('r', 10)")" "$alice"
as relay "SELECT once.ack('r', ARRAY['$alice'::uuid])" >/dev/null

# Bob's message on a topic no relay serves holds order-43; the admin cancels it.
bob=$(as bob "SELECT once.send('nobody.serves', '{\"by\": \"bob\"}', key => 'order-43')")
alice=$(as alice "SELECT once.send('orders.paid', '{\"by\": \"alice\"}', key => 'order-43')")
check "a relay of orders.* has nothing: Bob's head on another topic holds the key" \
    "$(as relay "SELECT count(*) FROM once.claim('r', 10, '30 seconds', ARRAY['orders.*'])")" 0
# (made to look 10 minutes old: 'unclaimed' means due for over 5 minutes and never taken)
sql -c "UPDATE once.outbox SET visible_at = now() - interval '10 minutes' WHERE id = '$bob'"
check "blocked_keys shows the head nobody claims" \
    "$(as ops "SELECT reason || ' ' || topic || ' ' || waiting FROM once.blocked_keys WHERE key = 'order-43'")" "unclaimed nobody.serves 1"
check "the admin cancels Bob's message" "$(as ops "SELECT once.cancel(ARRAY['$bob'::uuid])")" 1
check "... and Alice's message is claimable" \
    "$(as relay "SELECT id FROM once.claim('r', 10, '30 seconds', ARRAY['orders.*'])")" "$alice"
check "once.expedite of a leased message changes nothing" "$(as ops "SELECT once.expedite(ARRAY['$alice'::uuid])")" 0
check "producers may not expedite" "$(as bob "SELECT once.expedite(ARRAY['$alice'::uuid])" 2>&1 | grep -c 'permission denied')" 1
check "nor cancel" "$(as bob "SELECT once.cancel(ARRAY['$alice'::uuid])" 2>&1 | grep -c 'permission denied')" 1
check "cancel checks its ids (ON211)" "$(as ops "SELECT once.cancel(ARRAY[]::uuid[])" 2>&1 | grep -c 'ids must be a non-empty array')" 1
[ "$fails" = 0 ] || { echo "FAIL: $fails check(s)"; exit 1; }
echo "PASS"
