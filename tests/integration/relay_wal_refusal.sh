#!/usr/bin/env bash
# once-relay --transport wal with an HTTP sink that refuses, against a real server: what the
# receiver refuses for good (400) is written back to once.outbox as a dead letter, visible in
# once.dead_letters with its id, topic, payload and headers; what it refuses for now (503) is
# written back with the receiver's Retry-After, retried from the table by the relay's table
# claims after it and delivered; the rest is delivered from the stream. The slot is confirmed
# past all of them, and nothing is lost. A message with a content_type keeps it through the
# stream, the write-back and the table (its Content-Type on both attempts).
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N_OK=${RELAY_WAL_REFUSAL_OK:-40} N_DEAD=5 N_RETRY=5

start_postgres fsync=off wal_level=logical
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'"
# (a short backoff: the 503s are retried within the test)
psql_src -c "SELECT once.topic_policy('t.retry', backoff_base => '100 ms', backoff_max => '1 second')" >/dev/null
start_http_receiver r --dead-topic t.dead --fail-first 1 --fail-topic t.retry --retry-after 2

send() {   # topic count: one transaction; prints "id topic payload headers" per message
    psql_src -c "SELECT once.send('$1', jsonb_build_object('topic', '$1', 'n', g),
                                  headers => jsonb_build_object('x-n', g::text, 'x-topic', '$1'))::text
                        || ' $1 ' || jsonb_build_object('topic', '$1', 'n', g)::text
                        || ' ' || jsonb_build_object('x-n', g::text, 'x-topic', '$1')::text
                   FROM generate_series(1, $2) g"
}
{ send t.ok $((N_OK / 2)); send t.dead $N_DEAD; send t.retry $N_RETRY; send t.ok $((N_OK / 2)); } >"$T/sent.txt"
[ "$(psql_src -c "SELECT count(*) FROM once.outbox")" = 0 ] || fail "once.send wrote rows with once.transport = 'wal'"
sent_end=$(psql_src -c "SELECT pg_current_wal_lsn()")
ids_of_topic() { awk -v t="$1" '$2 == t {print $1}' "$T/sent.txt" | sort; }

mport=$(free_port)
start_relay w --db "$SRC_DB" --sink "$HTTP_URL" --transport wal --poll-interval 100ms --metrics "127.0.0.1:$mport"
ok_ids() { jq -r 'select(.status == 200) | .id' "$HTTP_LOG" | sort -u; }
all_ok() { [ "$(ok_ids | wc -l)" -ge $((N_OK + N_RETRY)) ]; }
once_wait_for "$N_OK + $N_RETRY delivered (200)" 60 all_ok || fail "delivered $(ok_ids | wc -l) of $((N_OK + N_RETRY))"
dead_rows() { [ "$(psql_src -c "SELECT count(*) FROM once.dead_letters")" -ge "$N_DEAD" ]; }
once_wait_for "$N_DEAD dead letters" 30 dead_rows || fail "dead letters: $(psql_src -c "SELECT count(*) FROM once.dead_letters")"
slot_past() { [ "$(psql_src -c "SELECT confirmed_flush_lsn >= '$sent_end' FROM pg_replication_slots WHERE slot_name = 'once_relay'")" = t ]; }
once_wait_for "the slot confirmed past every message" 30 slot_past ||
    fail "confirmed_flush_lsn $(psql_src -c "SELECT confirmed_flush_lsn FROM pg_replication_slots") < $sent_end"
once_wait_for "the table drained" 30 outbox_empty || fail "outbox still has $(outbox_left) live row(s)"

# Delivered: every t.ok and t.retry, nothing else; each t.ok once, from the stream.
expected_ok() { { ids_of_topic t.ok; ids_of_topic t.retry; } | sort; }
diff <(expected_ok) <(ok_ids) >/dev/null ||
    fail "delivered ids differ from the t.ok and t.retry ids sent: $(diff <(expected_ok) <(ok_ids) | head -3)"
[ "$(jq -r 'select(.topic == "t.ok") | .id' "$HTTP_LOG" | sort | uniq -d | wc -l)" = 0 ] || fail "a t.ok message was posted twice"
# t.retry: refused once (503, Retry-After: 2), then delivered from the table as attempt 2, not
# before the receiver's Retry-After (the topic's backoff alone would retry within 1 s).
for id in $(ids_of_topic t.retry); do
    [ "$(jq -r --arg id "$id" 'select(.id == $id) | .status' "$HTTP_LOG" | tr '\n' ' ')" = "503 200 " ] ||
        fail "t.retry $id: statuses $(jq -r --arg id "$id" 'select(.id == $id) | .status' "$HTTP_LOG" | tr '\n' ' '), want 503 then 200"
done
early=$(jq -s 'map(select(.topic == "t.retry")) | group_by(.id) | map(select(length == 2)
               | (map(select(.status == 200))[0].t - map(select(.status == 503))[0].t)) | map(select(. < 1.9)) | length' "$HTTP_LOG")
[ "$early" = 0 ] || fail "$early t.retry message(s) retried before the receiver's Retry-After"
# t.dead: refused once (400), dead at once, with what was sent.
for id in $(ids_of_topic t.dead); do
    [ "$(jq -r --arg id "$id" 'select(.id == $id) | .status' "$HTTP_LOG" | tr '\n' ' ')" = "400 " ] ||
        fail "t.dead $id was posted other than once with 400"
done
psql_src -c "SELECT id::text || ' ' || topic || ' ' || payload::text || ' ' || headers::text FROM once.dead_letters" |
    sort >"$T/dead.txt"
# (the relay adds no headers of its own to a written-back message: the sent headers come back)
awk '$2 == "t.dead"' "$T/sent.txt" | sort >"$T/sent-dead.txt"
diff -q "$T/sent-dead.txt" "$T/dead.txt" >/dev/null ||
    fail "once.dead_letters differs from the t.dead messages sent: $(diff "$T/sent-dead.txt" "$T/dead.txt" | head -4)"
[ "$(psql_src -c "SELECT count(*) FROM once.dead_letters WHERE attempt = 1 AND last_error LIKE '%400%'")" = "$N_DEAD" ] ||
    fail "dead letters without attempt 1 and the 400: $(psql_src -c "SELECT attempt, last_error FROM once.dead_letters LIMIT 1")"
metric() { curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk -v m="$1" '$1 == m { print $2 }'; }
[ "$(metric once_wal_written_back_total)" = $((N_DEAD + N_RETRY)) ] ||
    fail "once_wal_written_back_total is $(metric once_wal_written_back_total), want $((N_DEAD + N_RETRY))"
# A message with a content_type rides the stream (format 3): refused once (503), written back
# with it, delivered from the table with it; both attempts labelled, the body the string's value.
xml_id=$(psql_src -c "SELECT once.send('t.retry', to_jsonb('<order n=\"1\"/>'::text), content_type => 'application/xml')")
xml_statuses() { jq -r --arg id "$xml_id" 'select(.id == $id) | .status' "$HTTP_LOG" | tr '\n' ' '; }
xml_done() { [ "$(xml_statuses)" = "503 200 " ]; }
once_wait_for "the XML message refused, written back and delivered" 30 xml_done || fail "the XML message: statuses $(xml_statuses)"
[ "$(jq -r --arg id "$xml_id" 'select(.id == $id) | .ct + " " + .body' "$HTTP_LOG" | sort -u)" = 'application/xml <order n="1"/>' ] ||
    fail "the XML message arrived as $(jq -c --arg id "$xml_id" 'select(.id == $id) | [.ct, .body]' "$HTTP_LOG")"
stop_relay w
[ "$RELAY_RC" = 0 ] || fail "relay exited $RELAY_RC"
say "relay_wal_refusal: $N_OK delivered from the stream, $N_RETRY written back and delivered from the table, $N_DEAD dead letters as sent; slot confirmed past them"
