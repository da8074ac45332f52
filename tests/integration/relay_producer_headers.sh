#!/usr/bin/env bash
# A producer's message headers never reach the wire as transport or relay
# headers. HTTP: a message whose headers name Host, Content-Length, Idempotency-Key and
# X-Once-Topic arrives with the relay's values only (one of each), and the next message on the
# same kept-alive connection arrives intact (on 0.2 the forged Content-Length desynchronised the
# connection and the next message was answered 400 and dead-lettered). NATS: Nats-Msg-Id,
# Nats-Expected-*, Nats-Rollup and Once-* from the producer are not sent (on 0.2 the expected
# sequence failed every publish), the message is stored under the relay's Nats-Msg-Id.
# Both: trace context passes, and the relay logs the refused names, never their values.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres
start_nats

# forged_send TOPIC PAYLOAD KEY HEADERS: an outbox row carrying HEADERS. Written by a superuser
# UPDATE rather than once.send, because once.send may itself refuse such headers: the relay
# must still never send them (rows written before that check, or by an admin).
forged_send() {
    local id
    id=$(psql_src -c "SELECT once.send('$1', '$2', '$3')")
    psql_src -c "UPDATE once.outbox SET headers = '$4' WHERE id = '$id'"
    echo "$id"
}
header_values() { jq -r --arg n "$2" '[.headers[] | select((.[0] | ascii_downcase) == ($n | ascii_downcase)) | .[1]] | join("|")' <<<"$1"; }
dead_letters() { psql_src -c "SELECT count(*) FROM once.dead_letters"; }
# Done when both messages were answered 200, or as soon as one is a dead letter (0.2).
http_both_or_dead() { http_has "$HTTP_LOG" 2 || [ "$(dead_letters)" != 0 ]; }

say "HTTP: forged transport and relay headers"
start_http_receiver hdr
PORT=${HTTP_URL#http://127.0.0.1:}; PORT=${PORT%%/*}
# The first message's body is longer than its forged Content-Length, so on 0.2 the receiver
# reads 2 bytes and takes the rest as the start of the next request.
FORGED='{"Host": "internal-admin.local", "Content-Length": "2", "Idempotency-Key": "forged-idempotency-key",
         "X-Once-Topic": "billing.refund", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
         "X-Tenant": "t1"}'
ID1=$(forged_send t.hdr '{"n": 1, "pad": "POST /hook HTTP/1.1"}' k1 "$FORGED")
ID2=$(psql_src -c "SELECT once.send('t.hdr', '{\"n\": 2}', 'k1')")
# One request in flight, so the second message can only go after the first, on its connection.
start_relay http --db "$SRC_DB" --sink "$HTTP_URL" --max-in-flight 1 --poll-interval 100ms
once_wait_for "both messages answered 200 (or a dead letter)" 30 http_both_or_dead || fail "$(cat "$HTTP_LOG")"
[ "$(dead_letters)" = 0 ] || fail "dead-lettered: $(psql_src -c "SELECT id, last_error FROM once.dead_letters") receiver: $(cat "$HTTP_LOG")"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox has $(outbox_left)"
stop_relay http

first=$(jq -c --arg id "$ID1" 'select(.id == $id and .status == 200)' "$HTTP_LOG" | head -1)
second=$(jq -c --arg id "$ID2" 'select(.id == $id and .status == 200)' "$HTTP_LOG" | head -1)
[ -n "$first" ] && [ -n "$second" ] || fail "a message did not arrive: $(cat "$HTTP_LOG")"
[ "$(header_values "$first" Host)" = "127.0.0.1:$PORT" ] || fail "Host: $(header_values "$first" Host)"
[ "$(header_values "$first" Idempotency-Key)" = "$ID1" ] || fail "Idempotency-Key: $(header_values "$first" Idempotency-Key)"
[ "$(header_values "$first" X-Once-Topic)" = t.hdr ] || fail "X-Once-Topic: $(header_values "$first" X-Once-Topic)"
body1='{"n": 1, "pad": "POST /hook HTTP/1.1"}'
[ "$(header_values "$first" Content-Length)" = "${#body1}" ] || fail "Content-Length: $(header_values "$first" Content-Length)"
[ "$(jq -c .payload <<<"$first")" = '{"n":1,"pad":"POST /hook HTTP/1.1"}' ] || fail "first payload: $first"
[ "$(header_values "$first" traceparent)" = 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ] || fail "traceparent lost: $first"
[ "$(header_values "$first" X-Tenant)" = t1 ] || fail "X-Tenant lost: $first"
[ "$(jq -c .payload <<<"$second")" = '{"n":2}' ] || fail "second payload: $second"
[ "$(header_values "$second" Idempotency-Key)" = "$ID2" ] || fail "second Idempotency-Key: $second"
[ "$(jq .peer <<<"$first")" = "$(jq .peer <<<"$second")" ] || fail "not one kept-alive connection: $(jq -c '{id, peer}' "$HTTP_LOG")"
[ "$(jq -s length "$HTTP_LOG")" = 2 ] || fail "the receiver saw $(jq -s length "$HTTP_LOG") requests for 2 messages"
for name in Host Content-Length Idempotency-Key X-Once-Topic; do
    grep -q "message $ID1: header \"$name\" not sent" "$T/relay-http.log" || fail "no warning for $name"
done
! grep -q "internal-admin.local\|forged-idempotency-key\|billing.refund" "$T/relay-http.log" || fail "a refused value was logged"

say "NATS: forged JetStream and relay headers"
FORGED='{"Nats-Msg-Id": "forged-id", "Nats-Expected-Last-Sequence": "999", "Nats-Expected-Stream": "OTHER",
         "Nats-Rollup": "all", "Once-Topic": "forged.topic", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}'
ID3=$(forged_send t.nats '{"n": 3}' k2 "$FORGED")
ID4=$(psql_src -c "SELECT once.send('t.nats', '{\"n\": 4}', 'k2')")
start_relay nats --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=HDR&subject_prefix=hdr.&create_stream=1" --poll-interval 100ms
once_wait_for "both messages in the stream" 30 stream_has HDR 2 || fail "stream HDR has $(stream_msgs HDR); outbox: $(psql_src -c "SELECT id, attempt, last_error FROM once.outbox")"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox has $(outbox_left)"
stop_relay nats
m1=$(python3 "$RELAY_LIB/nats_stream_get.py" "$NATS_PORT" HDR 1) || fail "cannot read message 1 of HDR"
m2=$(python3 "$RELAY_LIB/nats_stream_get.py" "$NATS_PORT" HDR 2) || fail "cannot read message 2 of HDR"
[ "$(header_values "$m1" Nats-Msg-Id)" = "$ID3" ] || fail "Nats-Msg-Id: $m1"
[ "$(header_values "$m1" Once-Topic)" = t.nats ] || fail "Once-Topic: $m1"
[ "$(header_values "$m1" traceparent)" = 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ] || fail "traceparent lost: $m1"
# The relay itself sets Nats-Expected-Stream (the stream it expects to store the message).
[ "$(header_values "$m1" Nats-Expected-Stream)" = HDR ] || fail "Nats-Expected-Stream: $m1"
[ -z "$(jq -r '.headers[] | select(.[0] | test("^Nats-(Expected-Last|Rollup)"; "i")) | .[0]' <<<"$m1")" ] || fail "forged Nats-* sent: $m1"
[ "$(jq -r .data <<<"$m1")" = '{"n": 3}' ] || fail "message 1 data: $m1"
[ "$(header_values "$m2" Nats-Msg-Id)" = "$ID4" ] || fail "second Nats-Msg-Id: $m2"
for name in Nats-Msg-Id Nats-Expected-Last-Sequence Nats-Rollup Once-Topic; do
    grep -q "message $ID3: header \"$name\" not sent" "$T/relay-nats.log" || fail "no warning for $name"
done
! grep -q "forged-id\|forged.topic" "$T/relay-nats.log" || fail "a refused value was logged"
say "relay_producer_headers: OK"
