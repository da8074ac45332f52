#!/usr/bin/env bash
# A message can hold back the later messages of its key for long: a deliver_at years ahead, or
# a topic no relay serves. On 0.2 that held every role's messages of the
# key; now a key orders one role's messages only (Alice's are not held by Bob's), and the
# holder's own later messages still wait behind it. 0.2 gave the admin no way out:
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
# Bob's message holds order-42 for ten years; Bob's later message of the key waits behind it,
# Alice's does not.
bob=$(as bob "SELECT once.send('orders.note', '{\"by\": \"bob\"}', key => 'order-42', deliver_at => now() + interval '3650 days')")
bob_next=$(as bob "SELECT once.send('orders.paid', '{\"by\": \"bob\"}', key => 'order-42')")
alice=$(as alice "SELECT once.send('orders.paid', '{\"by\": \"alice\"}', key => 'order-42')")
check "Alice's message of the key is not held by Bob's: a relay claims it alone" \
    "$(as relay "SELECT string_agg(id::text, ' ') FROM once.claim('r', 10)")" "$alice"
as relay "SELECT once.ack('r', ARRAY['$alice'::uuid])" >/dev/null
check "Bob's later message waits behind his delayed one" "$(as relay "SELECT count(*) FROM once.claim('r', 10)")" 0
check "blocked_keys says why, and whose order it is" \
    "$(as ops "SELECT reason || ' ' || held_message_id || ' ' || waiting || ' ' || key_owner FROM once.blocked_keys WHERE key = 'order-42'")" "delayed $bob 1 bob"
check "the admin expedites Bob's message" "$(as ops "SELECT once.expedite(ARRAY['$bob'::uuid])")" 1
check "... which a relay now claims" "$(as relay "SELECT id FROM once.claim('r', 10)")" "$bob"
as relay "SELECT once.ack('r', ARRAY['$bob'::uuid])" >/dev/null
check "... and after its ack Bob's next message follows" "$(as relay "SELECT id FROM once.claim('r', 10)")" "$bob_next"
as relay "SELECT once.ack('r', ARRAY['$bob_next'::uuid])" >/dev/null

# Bob's message on a topic no relay serves holds his order-43; the admin cancels it.
bob=$(as bob "SELECT once.send('nobody.serves', '{\"by\": \"bob\"}', key => 'order-43')")
bob_next=$(as bob "SELECT once.send('orders.paid', '{\"by\": \"bob\"}', key => 'order-43')")
check "a relay of orders.* has nothing: Bob's head on another topic holds his key" \
    "$(as relay "SELECT count(*) FROM once.claim('r', 10, '30 seconds', ARRAY['orders.*'])")" 0
# (made to look 10 minutes old: 'unclaimed' means due for over 5 minutes and never taken)
sql -c "UPDATE once.outbox SET visible_at = now() - interval '10 minutes' WHERE id = '$bob'"
check "blocked_keys shows the head nobody claims" \
    "$(as ops "SELECT reason || ' ' || topic || ' ' || waiting FROM once.blocked_keys WHERE key = 'order-43'")" "unclaimed nobody.serves 1"
check "the admin cancels Bob's message" "$(as ops "SELECT once.cancel(ARRAY['$bob'::uuid])")" 1
check "... and his next message is claimable" \
    "$(as relay "SELECT id FROM once.claim('r', 10, '30 seconds', ARRAY['orders.*'])")" "$bob_next"
check "once.expedite of a leased message changes nothing" "$(as ops "SELECT once.expedite(ARRAY['$bob_next'::uuid])")" 0
check "producers may not expedite" "$(as bob "SELECT once.expedite(ARRAY['$bob_next'::uuid])" 2>&1 | grep -c 'permission denied')" 1
check "nor cancel" "$(as bob "SELECT once.cancel(ARRAY['$bob_next'::uuid])" 2>&1 | grep -c 'permission denied')" 1
check "cancel checks its ids (ON211)" "$(as ops "SELECT once.cancel(ARRAY[]::uuid[])" 2>&1 | grep -c 'ids must not be empty')" 1
[ "$fails" = 0 ] || { echo "FAIL: $fails check(s)"; exit 1; }
echo "PASS"
