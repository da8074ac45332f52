#!/usr/bin/env bash
# once-relay: 20k messages through each sink (stdout, HTTP, NATS JetStream, PostgreSQL inbox);
# every message arrives, exactly once at JetStream and the inbox; per-key order at the inbox;
# headers reach the HTTP receiver; a message's content_type reaches HTTP and NATS as its
# Content-Type with the JSON string's value as the body; bad options and an unreachable sink
# fail at start.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N=${RELAY_TEST_N:-20000}

start_postgres
start_nats
start_http_receiver main

say "start-up errors"
rc=0; out=$(as_relay_user "$RELAY_BIN" --db "$SRC_DB" --sink stdout: --batch 0 2>&1) || rc=$?
[ $rc -ne 0 ] && grep -q -- "--batch 0 is out of range" <<<"$out" || fail "bad --batch: rc=$rc $out"
rc=0; out=$(as_relay_user "$RELAY_BIN" --db "$SRC_DB" --sink "http://127.0.0.1:$(free_port)/x" 2>&1) || rc=$?
[ $rc -ne 0 ] && grep -q "cannot reach the HTTP sink" <<<"$out" || fail "unreachable http sink: rc=$rc $out"
rc=0; out=$(as_relay_user "$RELAY_BIN" --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=NOPE" 2>&1) || rc=$?
[ $rc -ne 0 ] && grep -q 'stream "NOPE" does not exist' <<<"$out" || fail "missing stream: rc=$rc $out"
rc=0; out=$(as_relay_user "$RELAY_BIN" --db "$SRC_DB" --sink "postgresql://u:topsecret@127.0.0.1:1/x" 2>&1) || rc=$?
[ $rc -ne 0 ] && ! grep -q topsecret <<<"$out" && grep -q "u:\*\*\*@" <<<"$out" || fail "password leaked or wrong error: $out"
rc=0; out=$("$RELAY_BIN" --db "$SRC_DB" --sink stdout: 2>&1) || rc=$?
[ $rc -ne 0 ] && grep -q "refusing to run as root" <<<"$out" || fail "ran as root: $out"
as_relay_user "$RELAY_BIN" --db "$SRC_DB" --sink stdout: --check-config | grep -q "configuration OK" || fail "--check-config"
! grep -qi "terminate\|what()" <<<"$out" || fail "stack trace-ish output: $out"

say "stdout sink: $N messages"
send_messages "$N" 1000
start_relay out --db "$SRC_DB" --sink stdout: --batch 500 --poll-interval 200ms
once_wait_for "stdout: all $N lines" 120 lines_have_ids "$T/relay-out.out" "$N" || fail "stdout: $(wc -l <"$T/relay-out.out") lines"
stop_relay out; [ "$RELAY_RC" = 0 ] || fail "stdout relay exit code $RELAY_RC"
jq -e 'select(.topic == null or .payload.n == null)' "$T/relay-out.out" >/dev/null && fail "stdout line without topic/payload"
[ "$(outbox_left)" = 0 ] || fail "outbox not empty after stdout run"

say "HTTP sink: $N messages"
send_messages "$N" 1000 100001
start_relay http --db "$SRC_DB" --sink "$HTTP_URL" --batch 200 --max-in-flight 32 --poll-interval 200ms
once_wait_for "http: all $N delivered" 180 http_has "$HTTP_LOG" "$N" || fail "http: $(http_count "$HTTP_LOG") delivered"
once_wait_for "http: outbox empty" 30 outbox_empty || true
[ "$(outbox_left)" = 0 ] || fail "outbox not empty after http run"
stop_relay http; [ "$RELAY_RC" = 0 ] || fail "http relay exit code $RELAY_RC"
jq -e 'select(.ct != "application/json" or .trace == null or .topic == null)' "$HTTP_LOG" >/dev/null && fail "HTTP headers missing"
# A message with a content_type: its Content-Type, and the JSON string's value as the body.
xml_id=$(psql_src -c "SELECT once.send('t.xml', to_jsonb('<order n=\"1\"/>'::text), content_type => 'application/xml')")
start_relay http-xml --db "$SRC_DB" --sink "$HTTP_URL" --poll-interval 100ms
once_wait_for "http: the XML message" 30 http_has "$HTTP_LOG" $((N + 1)) || fail "http: $(http_count "$HTTP_LOG") delivered"
stop_relay http-xml
jq -e --arg id "$xml_id" 'select(.id == $id) | .ct == "application/xml" and .body == "<order n=\"1\"/>"' "$HTTP_LOG" >/dev/null ||
    fail "HTTP: the XML message arrived as $(jq -c --arg id "$xml_id" 'select(.id == $id)' "$HTTP_LOG")"

say "--check-config with create_stream=1 reports the missing stream and creates nothing"
stream_exists() { curl -sf "http://127.0.0.1:$NATS_MON/jsz?streams=1" | jq -e '[.account_details[]?.stream_detail[]? | select(.name == "ONCE")] | length > 0' >/dev/null; }
out=$(as_relay_user "$RELAY_BIN" --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=ONCE&subject_prefix=once.&create_stream=1" --check-config 2>&1) ||
    fail "--check-config with a missing stream and create_stream=1: $out"
grep -q 'stream "ONCE" does not exist; once-relay will create it' <<<"$out" || fail "--check-config did not report the missing stream: $out"
! stream_exists || fail "--check-config created the JetStream stream"

say "NATS JetStream sink: $N messages"
send_messages "$N" 1000 200001
start_relay nats --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=ONCE&subject_prefix=once.&create_stream=1" --batch 500 --poll-interval 200ms
once_wait_for "nats: $N in the stream" 120 stream_has ONCE "$N" || fail "nats: $(stream_msgs ONCE) in stream"
once_wait_for "nats: outbox empty" 30 outbox_empty || fail "outbox not empty after nats run"
[ "$(stream_msgs ONCE)" = "$N" ] || fail "stream has $(stream_msgs ONCE) messages, want exactly $N"
stop_relay nats; [ "$RELAY_RC" = 0 ] || fail "nats relay exit code $RELAY_RC"
# A message with a content_type: a Content-Type header, and the JSON string's value as the data.
xml_id=$(psql_src -c "SELECT once.send('t.xml', to_jsonb('<order n=\"2\"/>'::text), content_type => 'application/xml')")
start_relay nats-xml --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=ONCE&subject_prefix=once.&create_stream=1" --poll-interval 100ms
once_wait_for "nats: the XML message" 30 stream_has ONCE $((N + 1)) || fail "nats: $(stream_msgs ONCE) in stream"
stop_relay nats-xml
m=$(python3 "$RELAY_LIB/nats_stream_get.py" "$NATS_PORT" ONCE $((N + 1))) || fail "reading stream ONCE"
jq -e --arg id "$xml_id" '(.headers | map(select(.[0] == "Nats-Msg-Id"))[0][1]) == $id
       and (.headers | map(select(.[0] == "Content-Type"))[0][1]) == "application/xml" and .data == "<order n=\"2\"/>"' \
    <<<"$m" >/dev/null || fail "NATS: the XML message arrived as $m"

say "PostgreSQL inbox sink: $N messages"
send_messages "$N" 1000 300001
start_relay pg --db "$SRC_DB" --sink "$DST_URI&source=src" --batch 500 --max-in-flight 500 --poll-interval 200ms
once_wait_for "inbox: all $N" 180 inbox_has "$N" || fail "inbox: $(psql_dst -c 'SELECT count(*) FROM relay_received')"
stop_relay pg; [ "$RELAY_RC" = 0 ] || fail "pg relay exit code $RELAY_RC"
[ "$(psql_dst -c 'SELECT count(*) FROM relay_received')" = "$N" ] || fail "inbox has duplicates"
bad=$(psql_dst -c "SELECT count(*) FROM (SELECT key, payload->>'n' AS n, lag((payload->>'n')::int) OVER (PARTITION BY key ORDER BY n) AS prev FROM relay_received) x WHERE prev > n::int")
[ "$bad" = 0 ] || fail "per-key order broken at the inbox ($bad inversions)"
say "relay_sinks: OK"
