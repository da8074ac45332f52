#!/usr/bin/env bash
# A locked settlement that fails on a healthy connection, every time: the transaction rolls
# back and the batch comes back with no attempt counted, so in the locked mode alone such a
# message would be claimed and given back forever. The relay then claims with leases for a
# while, where attempts are counted: the message ends as a dead letter after max_attempts,
# and every other message is delivered. (The failure here: a deferred trigger that refuses
# to let a 't.poison' message leave the outbox at COMMIT.)
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres
psql_src >/dev/null <<'SQL'
CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'poison message % may not leave the outbox', OLD.id; END $$;
CREATE CONSTRAINT TRIGGER refuse_poison AFTER DELETE ON once.outbox DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.topic = 't.poison') EXECUTE FUNCTION refuse_poison();
SELECT once.topic_policy('t.poison', max_attempts => 2, backoff_base => '100 ms', backoff_max => '100 ms');
SELECT once.send('t.poison', '{"poison": true}');
SQL
send_messages 50 0

poison_dead() { [ "$(psql_src -c "SELECT count(*) FROM once.outbox WHERE topic = 't.poison' AND dead_at IS NOT NULL")" = 1 ]; }
delivered() { jq -r 'select(.topic != "t.poison") | .id' "$T/relay-p.out" 2>/dev/null | sort -u | wc -l; }
all_delivered() { [ "$(delivered)" -ge 50 ]; }

start_relay p --db "$SRC_DB" --sink stdout: --claim-mode locked --batch 20 --lease 1s --poll-interval 100ms \
    --reconnect-max 500ms --maintenance off
once_wait_for "a locked settlement to fail" 30 relay_log_has p "settling a locked batch failed" ||
    fail "the poison message's COMMIT never failed"
once_wait_for "the poison message to become a dead letter" 60 poison_dead ||
    fail "the poison message is not dead: $(psql_src -c "SELECT attempt, relay, last_error FROM once.outbox WHERE topic = 't.poison'")"
relay_log_has p "claims are leased for the next" || fail "no switch to leased claims after the failed settlement"
once_wait_for "every other message delivered" 30 all_delivered || fail "$(delivered) of 50 delivered"
once_wait_for "the outbox drained but for the dead letter" 30 outbox_empty || fail "outbox has $(outbox_left)"
attempts=$(psql_src -c "SELECT attempt FROM once.outbox WHERE topic = 't.poison'")
[ "$attempts" -ge 2 ] || fail "the dead letter counts $attempts attempt(s), want >= 2"
stop_relay p
[ "$RELAY_RC" = 0 ] || fail "exit code $RELAY_RC"
say "relay_locked_poison: OK (dead after $attempts attempts; 50 others delivered)"
