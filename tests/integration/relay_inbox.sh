#!/usr/bin/env bash
# once-relay's PostgreSQL sink with a failing handler: messages are delivered in grouped
# transactions; one message whose handler raises rolls its group back, the others are retried
# one by one and arrive once; the failing one is recorded with once.inbox_failed, becomes
# poison after the inbox's max attempts and is then dead-lettered in the outbox; no_handler
# is retried with a clear reason.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres
[ "$(psql_dst -c "SELECT to_regprocedure('once.inbox_failed(text,text,text)') IS NOT NULL")" = t ] || { say "no inbox in this pg_once: skipped"; exit 0; }
psql_dst >/dev/null <<'SQL'
CREATE FUNCTION public.explode(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'cannot book order %', msg.payload->>'n' USING ERRCODE = 'P0001'; END $$;
SELECT once.subscribe('t.bad', 'public.explode(once.inbound)'::regprocedure);
-- record only t.* so that x.none has no handler at all
SELECT once.unsubscribe('>');
SELECT once.subscribe('t.*', 'public.record_message(once.inbound)'::regprocedure);
SELECT once.inbox_configure('src', max_attempts => 2);
SQL
psql_src -c "SELECT once.topic_policy('t.bad', max_attempts => 5, backoff_base => '10 milliseconds', backoff_max => '50 milliseconds')" >/dev/null
psql_src -c "SELECT once.topic_policy('x.none', max_attempts => 25, backoff_base => '10 milliseconds', backoff_max => '50 milliseconds')" >/dev/null
send_messages 400 0
BAD=$(psql_src -c "SELECT once.send('t.bad', '{\"n\": -1}')")
NONE=$(psql_src -c "SELECT once.send('x.none', '{\"n\": -2}')")
send_messages 400 0 1001
start_relay pg --db "$SRC_DB" --sink "$DST_URI&source=src" --batch 100 --poll-interval 100ms
once_wait_for "800 good messages at the inbox" 60 inbox_has 800 || fail "inbox has $(psql_dst -c 'SELECT count(*) FROM relay_received')"
once_wait_for "the bad message dead-lettered" 60 bash -c "[ -n \"\$(psql -X -At -d src -c \"SELECT 1 FROM once.dead_letters WHERE id = '$BAD'\")\" ]" ||
    fail "bad message: $(psql_src -c "SELECT attempt, last_error FROM once.outbox WHERE id = '$BAD'")"
[ "$(psql_dst -c 'SELECT count(*) FROM relay_received')" = 800 ] || fail "duplicates or the bad message at the inbox: $(psql_dst -c "SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE topic = 't.bad') FROM relay_received")"
[ "$(psql_dst -c "SELECT count(*) FROM once.inbox_poison WHERE message_id = '$BAD'")" = 1 ] || fail "not poison in the inbox"
relay_log_has pg "cannot book order -1" || fail "handler error not logged"
psql_src -c "SELECT last_error FROM once.outbox WHERE id = '$NONE'" | grep -q "no handler subscribed for topic \"x.none\"" || fail "no_handler reason missing"
stop_relay pg; [ "$RELAY_RC" = 0 ] || fail "exit code $RELAY_RC"
say "relay_inbox: OK"
