#!/usr/bin/env bash
# docs/operations.md states only what works: every ```sql block of it is run here, in order,
# as a role that has only once_admin, against a database holding each incident the guide
# walks through (a dead letter, a key blocked by a dead head, a poison inbox message, a saga
# that failed after its compensation kept failing). Then the effects the guide promises are
# checked: the dead head's redrive unblocks its key, the inbox retry clears the poison.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/../lib/cluster.sh"
once_cluster_start fsync=off
trap once_cluster_stop EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

psql -qX -v ON_ERROR_STOP=1 -d postgres >/dev/null <<'SQL'
CREATE EXTENSION pg_once;
CREATE ROLE oncall LOGIN IN ROLE once_admin;
-- a dead letter (the guide's example id stands for its id)
SELECT once.send('payment.requested', '{"order": 1}') AS paid \gset
SELECT count(*) FROM once.claim('relay-a', 10, topics => ARRAY['payment.requested']);
SELECT once.dead('relay-a', :'paid', 'HTTP 422: unknown customer');
-- key order-7: a dead head and two messages behind it
SELECT once.send('kitchen.ticket', '{"n": 1}', key => 'order-7') AS ticket \gset
SELECT count(*) FROM once.claim('relay-a', 10, topics => ARRAY['kitchen.ticket']);
SELECT once.dead('relay-a', :'ticket', 'HTTP 400: bad ticket');
SELECT once.send('kitchen.ticket', '{"n": 2}', key => 'order-7');
SELECT once.send('kitchen.ticket', '{"n": 3}', key => 'order-7');
-- order.created: a message whose attempts ran out during a sink outage, one waiting for its retry
SELECT once.send('order.created', '{"order": 2}') AS created \gset
SELECT count(*) FROM once.claim('relay-a', 10, topics => ARRAY['order.created']);
SELECT once.dead('relay-a', :'created', 'connection refused');
SELECT once.send('order.created', '{"order": 3}');
SELECT once.nack('relay-a', m.id, 'connection refused', interval '1 hour')
  FROM once.claim('relay-a', 10, topics => ARRAY['order.created']) m;
-- a poison inbox message (default max_attempts 5)
SELECT once.inbox_failed('orders', 'msg-17', 'handler: null value in column "sku"') FROM generate_series(1, 5);
-- a saga whose payment failed (the cause) and whose stock release then failed (the last error)
SELECT once.saga_define('cafe_order', '{"steps": [
  {"name": "reserve_stock", "action": {"topic": "stock.reserve"}, "compensation": {"topic": "stock.release", "max_attempts": 1}},
  {"name": "capture_payment", "action": {"topic": "payment.capture"}, "kind": "pivot"}]}');
SELECT once.saga_start('cafe_order', 'order-1001', '{"order_id": 1001}');
SELECT once.saga_reply('order-1001', 'reserve_stock', 'succeeded');
SELECT once.saga_reply('order-1001', 'capture_payment', 'failed', '{"error": "card declined"}');
SELECT once.saga_reply('order-1001', 'reserve_stock', 'compensation_failed', '{"error": "stock service down"}');
SQL
[ "$(psql -qAtX -d postgres -c "SELECT status FROM once.sagas WHERE saga_id = 'order-1001'")" = failed ] \
    || fail "the saga did not fail"

# Each ```sql block of the guide, in order, as the on-call role.
# The guide's example message id stands for the dead letter's id here.
example=0190a5e2-7c4b-7d1e-8a4f-2b6c9d0e1f23
paid=$(psql -qAtX -d postgres -c "SELECT id FROM once.dead_letters WHERE topic = 'payment.requested'")
blocks=$(awk '/^```sql$/ {on = 1; next} /^```$/ {if (on) print "-- end of block"; on = 0; next} on' "$root/docs/operations.md" |
         sed "s/$example/$paid/g")
n=$(grep -c '^-- end of block$' <<<"$blocks")
[ "$n" -ge 7 ] || fail "only $n sql blocks found in docs/operations.md"
out=$(psql -X -v ON_ERROR_STOP=1 -U oncall -d postgres <<<"$blocks" 2>&1) || { echo "$out"; fail "a statement of the guide failed"; }
echo "$out"
echo "ok - $n sql blocks of docs/operations.md ran as a once_admin role"

grep -q 'card declined' <<<"$out" || fail "the failed saga's cause is not shown"
grep -q 'stock service down' <<<"$out" || fail "the failed saga's last error is not shown"
grep -q 'null value in column' <<<"$out" || fail "the poison message is not shown"
grep -q 'order-7 .*| dead' <<<"$out" || fail "the blocked key is not shown"
grep -q 'order.created .*| *1 |' <<<"$out" || fail "the retrying message is not shown"
echo "ok - the guide's queries show the cause, the last error, the poison message, the blocked key"

[ "$(psql -qAtX -d postgres -c "SELECT count(*) FROM once.blocked_keys WHERE key = 'order-7'")" = 0 ] \
    || fail "order-7 is still blocked after the guide's redrive"
[ "$(psql -qAtX -d postgres -c "SELECT count(*) FROM once.inbox WHERE poison")" = 0 ] \
    || fail "msg-17 is still poison after the guide's inbox_retry"
echo "ok - the guide's actions unblocked order-7 and cleared the poison"
echo "operations_sql: all passed"
