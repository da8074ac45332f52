#!/usr/bin/env bash
# Fences are per slot: two relay groups split by topic on one database, each with
# its own slot (a: topics a.>, slot_a; b: topics b.>, slot_b). Group b's relay wrote back a
# keyed message of key kb, fenced for slot_b, and was killed before its slot passed the fence
# (the state is made with once.wal_write_back, as that relay would have called it). Group a
# then writes back and confirms past it (its own keyed refusal, released at its confirmation)
# and restarts: slot_b's fence stays, so no relay claims kb's message. Group b's relay starts,
# its slot passes the fence, the fence is released and the message is delivered from the table.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres fsync=off wal_level=logical shared_preload_libraries=pg_once
for s in slot_a slot_b; do
    "${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --wal-slot "$s" --create-wal-slot >/dev/null || fail "--create-wal-slot $s"
done
psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'"
start_http_receiver r --fail-first 1 --fail-topic a.k   # each a.k message is refused once
group() {   # group NAME: the relay of group NAME (its topics, its slot)
    start_relay "$1" --db "$SRC_DB" --sink "$HTTP_URL" --transport wal --topics "$1.>" --wal-slot "slot_$1" \
        --poll-interval 100ms --maintenance off
}
fence_of() { psql_src -c "SELECT coalesce(stream_fence_slot || ' ' || stream_fence, 'none') FROM once.outbox WHERE id = '$1'"; }
delivered() { [ "$(jq -r --arg id "$1" 'select(.status == 200 and .id == $id) | .id' "$HTTP_LOG" | wc -l)" -ge 1 ]; }
confirmed_past() { [ "$(psql_src -c "SELECT confirmed_flush_lsn >= '$2' FROM pg_replication_slots WHERE slot_name = '$1'")" = t ]; }

say "group b's relay wrote back a message of key kb (fenced for slot_b) and died before confirming"
xb=$(psql_src -c "SELECT gen_random_uuid()")
psql_src -c "SELECT once.wal_write_back(ROW('$xb', 'b.k', 'kb', '{\"n\": 1}', NULL, now(), 1, 'HTTP 503', false,
                                        'postgres'::regrole::oid, gen_random_uuid(), 'slot_b', NULL, NULL)::once.wal_write_back_message)" >/dev/null
fence=$(psql_src -c "SELECT stream_fence FROM once.outbox WHERE id = '$xb'")
[ "$(fence_of "$xb")" = "slot_b $fence" ] || fail "the write-back is fenced as $(fence_of "$xb"), want slot_b $fence"

say "group a streams, writes back its own keyed refusal and confirms past both fences"
group a
ya=$(psql_src -c "SELECT once.send('a.k', '{\"n\": 2}', key => 'ka')")
za=$(psql_src -c "SELECT once.send('a.u', '{\"n\": 3}')")
once_wait_for "a's keyed message delivered after its write-back" 60 delivered "$ya" || fail "a.k not delivered: $(outbox_left) left"
once_wait_for "a's unkeyed message delivered" 30 delivered "$za" || fail "a.u not delivered"
[ "$(jq -r --arg id "$ya" 'select(.status == 503 and .id == $id) | .id' "$HTTP_LOG" | wc -l)" -ge 1 ] ||
    fail "a.k was not refused first: no write-back tested"
once_wait_for "slot_a confirmed past slot_b's fence" 30 confirmed_past slot_a "$fence" ||
    fail "slot_a confirmed $(psql_src -c "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'slot_a'")"
stop_relay a
[ "$RELAY_RC" = 0 ] || fail "relay a exited $RELAY_RC"
group a   # its start releases its slot's fences up to slot_a's confirmed position
zb=$(psql_src -c "SELECT once.send('a.u', '{\"n\": 4}')")
once_wait_for "a's next message delivered" 30 delivered "$zb" || fail "a.u not delivered after the restart"
[ "$(fence_of "$xb")" = "slot_b $fence" ] || fail "group a released slot_b's fence: $(fence_of "$xb")"
[ "$(psql_src -c "SELECT reason FROM once.blocked_keys WHERE key = 'kb'")" = fenced ] ||
    fail "once.blocked_keys: $(psql_src -c "TABLE once.blocked_keys")"
! delivered "$xb" || fail "kb's message was delivered while fenced"
say "slot_a confirmed past slot_b's fence (twice: a confirmation and a start); the fence stays"

say "group b's relay starts: its slot passes the fence, which is released; the message is delivered"
group b
once_wait_for "kb's message delivered" 60 delivered "$xb" || fail "kb not delivered; fence: $(fence_of "$xb")"
once_wait_for "slot_b confirmed past the fence" 10 confirmed_past slot_b "$fence" ||
    fail "kb's fence was released, but slot_b is not past it"
once_wait_for "the table drained" 30 outbox_empty || fail "outbox still has $(outbox_left)"
stop_relay b
[ "$RELAY_RC" = 0 ] || fail "relay b exited $RELAY_RC"
stop_relay a
[ "$RELAY_RC" = 0 ] || fail "relay a exited $RELAY_RC"
say "relay_wal_fence_slots: OK"
