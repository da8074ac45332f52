#!/usr/bin/env bash
# The locked claim mode survives kill -9 in the middle of a batch: the relay's transaction is
# the lease. Two relays in --claim-mode locked (JetStream for t.a; the inbox for t.b, one
# transaction per message there (tx=message) and a handler that takes ~1 ms, so a batch is
# open for a while and its first messages are visible in the inbox before the batch commits)
# are killed with kill -9 while a transaction of the inbox relay holds messages the inbox has
# already processed. After each kill the outbox has every unsettled message back, with no
# attempt counted. At the end every message is at its deduplicating sink exactly once, in
# order per key at the inbox.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N=${RELAY_TEST_N:-6000}
KILLS=${RELAY_TEST_KILLS:-4}

start_postgres
start_nats
psql_dst >/dev/null <<'SQL'
CREATE OR REPLACE FUNCTION public.record_message(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_catalog.pg_sleep(0.001);   -- a sink that takes a moment: batches stay open
  INSERT INTO public.relay_received (id, topic, key, payload)
  VALUES (msg.message_id::uuid, msg.topic, msg.headers->>'key', msg.payload);
END $$;
SQL
send_messages "$N" 400
na=$(psql_src -c "SELECT count(*) FROM once.outbox WHERE topic = 't.a'")
nb=$(psql_src -c "SELECT count(*) FROM once.outbox WHERE topic = 't.b'")
NATS_URI="nats://127.0.0.1:$NATS_PORT?stream=LOCKED&subject_prefix=once.&create_stream=1"
run_both() {
    start_relay lj --db "$SRC_DB" --sink "$NATS_URI" --topics t.a --claim-mode locked --batch 100 --maintenance off
    start_relay lp --db "$SRC_DB" --sink "$DST_URI&source=src&tx=message" --topics t.b --claim-mode locked --batch 200 --maintenance off
}
progress() { echo $(( $(stream_msgs LOCKED) + $(psql_dst -c 'SELECT count(*) FROM relay_received') )); }
grew() { [ "$(progress)" -ge "$1" ]; }
no_relay_sessions() { [ "$(psql_src -c "SELECT count(*) FROM pg_stat_activity WHERE datname = 'src' AND application_name LIKE 'once-relay %'")" = 0 ]; }
# Messages the inbox processed that are still in the outbox: before a kill, claimed by a
# transaction that has not committed (its delete is not visible yet); after it, given back.
delivered_in_outbox() {
    comm -12 <(psql_src -c "SELECT id FROM once.outbox ORDER BY 1" | sort) \
             <(psql_dst -c "SELECT id FROM relay_received ORDER BY 1" | sort) | wc -l
}
lp_mid_batch() { [ "$(delivered_in_outbox)" -gt 0 ]; }

run_both
seen_back=0
for ((k = 1; k <= KILLS; k++)); do
    target=$(( N * k / (KILLS + 2) ))
    once_wait_for "progress to $target before kill $k" 120 grew "$target" || fail "no progress ($(progress))"
    once_wait_for "relay lp between publishing and COMMIT" 30 lp_mid_batch || fail "relay lp never caught mid-batch"
    kill9_relay lp; kill9_relay lj
    once_wait_for "the killed relays' sessions to end" 30 no_relay_sessions || fail "relay sessions linger"
    back=$(delivered_in_outbox)
    seen_back=$((seen_back + back))
    counted=$(psql_src -c "SELECT count(*) FROM once.outbox WHERE attempt > 0 OR relay IS NOT NULL")
    say "kill -9 $k at $(progress) delivered: $back delivered message(s) back in the outbox, $counted with an attempt counted"
    [ "$counted" = 0 ] || fail "$counted message(s) had an attempt counted: a killed locked transaction must give them back untouched"
    run_both
done
[ "$seen_back" -gt 0 ] || fail "no kill landed between publishing and COMMIT (nothing delivered came back)"
once_wait_for "all $na at JetStream" 240 stream_has LOCKED "$na" || fail "stream has $(stream_msgs LOCKED) of $na"
once_wait_for "all $nb at the inbox" 240 inbox_has "$nb" || fail "inbox has $(psql_dst -c 'SELECT count(DISTINCT id) FROM relay_received') of $nb"
once_wait_for "outbox drained" 60 outbox_empty || fail "outbox still has $(outbox_left)"
stop_relay lj; stop_relay lp
[ "$(stream_msgs LOCKED)" = "$na" ] || fail "JetStream has $(stream_msgs LOCKED) messages, want exactly $na"
[ "$(psql_dst -c 'SELECT count(*) FROM relay_received')" = "$nb" ] || fail "inbox handler ran more than once for some message"
inversions=$(psql_dst -c "SELECT count(*) FROM (SELECT (payload->>'n')::int AS v,
                                 lag((payload->>'n')::int) OVER (PARTITION BY key ORDER BY n) AS prev
                            FROM relay_received) x WHERE prev > v")
[ "$inversions" = 0 ] || fail "per-key order broken at the inbox: $inversions inversions"
relay_log_has lp "claim mode locked" || fail "relay lp did not run in the locked mode"
say "relay_locked_kill: OK ($KILLS kill -9 mid-batch, $seen_back delivered messages came back with the rollback, $na at JetStream, $nb at the inbox exactly once, per-key order kept)"
