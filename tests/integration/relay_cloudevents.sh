#!/usr/bin/env bash
# --cloudevents on sends each message as a CloudEvent 1.0 in binary content
# mode, checked with the CNCF CloudEvents JavaScript SDK (the cloudevents npm package,
# tests/integration/node):
# - HTTP: the receiver (lib/webhook_receiver.js) parses every request with HTTP.toEvent and
#   validates it; each attribute is checked: specversion 1.0, id = message id, source = the
#   default /pg_once/<database>/<relay name>, type = topic, subject = key (absent without a
#   key; percent-encoded per the binding when the key has spaces or non-ASCII), time =
#   created_at, datacontenttype application/json, data = the payload (a message sent with a
#   content_type: that datacontenttype, and the JSON string's value as data);
# - NATS: the stored JetStream messages' ce-* headers (lib/nats_stream_get.py) go through the
#   same SDK (lib/cloudevents_parse.js) with a configured --cloudevents-source; the NATS
#   binding's ce-datacontenttype is present and Content-Type is not;
# - the relay's own headers stay (Idempotency-Key, Nats-Msg-Id) and a producer's ce-* header
#   is not sent.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
NODE_DIR="$ONCE_SOURCE_DIR/tests/integration/node"
command -v node >/dev/null || fail "node is needed (scripts/setup)"
[ -d "$NODE_DIR/node_modules/cloudevents" ] ||
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci in $NODE_DIR"

start_postgres
start_nats

# The messages: a plain key, a key that needs percent-encoding, no key, and one whose stored
# headers name ce-type. Their ids and created_at (ms since the epoch) are kept.
send_messages_ce() {
    psql_src -c "SELECT once.send('ce.order.paid', '{\"n\": 1}', 'order-1')" >/dev/null
    psql_src -c "SELECT once.send('ce.order.paid', '{\"n\": 2, \"t\": \"caf\u00e9\"}', 'order 2 \"café\" 100%')" >/dev/null
    psql_src -c "SELECT once.send('ce.audit', '{\"n\": 3}')" >/dev/null
    # once.send refuses a ce-* header (ON214); a superuser's UPDATE stands for rows written
    # another way: the relay must still not send it.
    local id; id=$(psql_src -c "SELECT once.send('ce.order.paid', '{\"n\": 4}', 'order-4', '{\"x-tenant\": \"t1\"}')")
    psql_src -c "UPDATE once.outbox SET headers = headers || '{\"ce-type\": \"forged\"}' WHERE id = '$id'"
    psql_src -c "SELECT json_agg(json_build_object('id', id, 'topic', topic, 'key', key, 'payload', payload,
                   'ms', floor(extract(epoch FROM created_at) * 1000)::bigint)) FROM once.outbox WHERE dead_at IS NULL" >"$1"
}
expected_count() { jq length "$1"; }

# check_events EVENTS_JSONL EXPECTED_JSON SOURCE: every expected message arrived once as a
# valid CloudEvent with the right attributes.
check_events() {
    local events=$1 expected=$2 source=$3 n id
    n=$(expected_count "$expected")
    [ "$(jq -s 'map(select(.error == null)) | length' "$events")" = "$n" ] || fail "not $n valid events: $(cat "$events")"
    for ((i = 0; i < n; i++)); do
        local e; e=$(jq -c ".[$i]" "$expected")
        id=$(jq -r .id <<<"$e")
        local ev; ev=$(jq -c --arg id "$id" 'select(.id == $id)' "$events")
        [ -n "$ev" ] || fail "message $id: no event"
        jq -e --argjson e "$e" --arg src "$source" '
            .specversion == "1.0" and .source == $src and .type == $e.topic
            and .datacontenttype == "application/json" and .data == $e.payload' <<<"$ev" >/dev/null ||
            fail "message $id: attributes $ev, expected $e (source $source)"
        # time: the same instant as created_at (the SDK keeps whole milliseconds)
        local ms; ms=$(node -e 'console.log(Date.parse(process.argv[1]))' "$(jq -r .time <<<"$ev")")
        [ "$ms" = "$(jq -r .ms <<<"$e")" ] || fail "message $id: time $(jq -r .time <<<"$ev") is not created_at ($(jq -r .ms <<<"$e") ms)"
        # subject: the key, as the binding encodes it (the SDK hands the header value over
        # without percent-decoding it); no subject without a key
        if [ "$(jq -r .key <<<"$e")" = null ]; then
            [ "$(jq -r '.subject // "none"' <<<"$ev")" = none ] || fail "message $id: a subject without a key: $ev"
        else
            local subject; subject=$(node -e 'console.log(decodeURIComponent(process.argv[1]))' "$(jq -r .subject <<<"$ev")")
            [ "$subject" = "$(jq -r .key <<<"$e")" ] || fail "message $id: subject $(jq -r .subject <<<"$ev") is not the key"
        fi
    done
    [ "$(jq -r 'select(.type == "forged")' "$events")" = "" ] || fail "a producer's ce-type was sent"
}

say "HTTP, binary content mode, default source"
send_messages_ce "$T/expected-http.json"
HTTP_LOG="$T/http-ce.jsonl"; : >"$HTTP_LOG"
node "$RELAY_LIB/webhook_receiver.js" --log "$HTTP_LOG" --port-file "$T/ce.port" >"$T/receiver.log" 2>&1 &
BG_PIDS+=($!)
once_wait_for "receiver" 20 test -s "$T/ce.port"
start_relay ce-http --db "$SRC_DB" --sink "http://127.0.0.1:$(cat "$T/ce.port")/events" --poll-interval 100ms --cloudevents on
once_wait_for "4 requests" 30 lines_have_ids "$HTTP_LOG" 4 || fail "receiver: $(cat "$HTTP_LOG")"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox: $(psql_src -c "SELECT id, last_error FROM once.outbox")"
stop_relay ce-http
[ -z "$(jq -r 'select(.ce_error) | .ce_error' "$HTTP_LOG")" ] || fail "the SDK refused: $(jq -r 'select(.ce_error)' "$HTTP_LOG")"
jq -c '.cloudevent' "$HTTP_LOG" >"$T/events-http.jsonl"
check_events "$T/events-http.jsonl" "$T/expected-http.json" /pg_once/src/ce-http
[ "$(jq -r 'select(.headers["idempotency-key"] == .cloudevent.id) | .id' "$HTTP_LOG" | wc -l)" = 4 ] || fail "Idempotency-Key lost"
[ "$(jq -r 'select(.headers["content-type"] == "application/json" and .headers["ce-datacontenttype"] == null) | .id' "$HTTP_LOG" | wc -l)" = 4 ] ||
    fail "HTTP: datacontenttype must be the Content-Type header"
[ "$(jq -r 'select(.headers["x-tenant"] == "t1") | .id' "$HTTP_LOG" | wc -l)" = 1 ] || fail "the producer's other header was lost"
jq -r '.headers["ce-subject"] // empty' "$HTTP_LOG" | grep -qxF 'order%202%20%22caf%C3%A9%22%20100%25' ||
    fail "ce-subject not percent-encoded as the binding says: $(jq -r '.headers["ce-subject"] // empty' "$HTTP_LOG")"
grep -q 'header "ce-type" not sent' "$T/relay-ce-http.log" || fail "no warning for the producer's ce-type"

say "NATS, binary content mode, configured source"
send_messages_ce "$T/expected-nats.json"
start_relay ce-nats --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=CE&subject_prefix=ce.&create_stream=1" \
    --poll-interval 100ms --cloudevents on --cloudevents-source "https://shop.example/orders"
once_wait_for "4 messages in the stream" 30 stream_has CE 4 || fail "stream CE has $(stream_msgs CE)"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox: $(psql_src -c "SELECT id, last_error FROM once.outbox")"
stop_relay ce-nats
for seq in 1 2 3 4; do python3 "$RELAY_LIB/nats_stream_get.py" "$NATS_PORT" CE "$seq"; done >"$T/nats.jsonl" || fail "reading stream CE"
node "$RELAY_LIB/cloudevents_parse.js" <"$T/nats.jsonl" >"$T/events-nats.jsonl"
[ -z "$(jq -r '.error // empty' "$T/events-nats.jsonl")" ] || fail "the SDK refused: $(cat "$T/events-nats.jsonl")"
check_events "$T/events-nats.jsonl" "$T/expected-nats.json" "https://shop.example/orders"
hv() { jq -r --arg n "$1" '[.headers[] | select((.[0] | ascii_downcase) == $n) | .[1]] | join("|")' <<<"$2"; }
while IFS= read -r m; do
    [ "$(hv ce-datacontenttype "$m")" = application/json ] || fail "NATS: ce-datacontenttype: $m"
    [ -z "$(hv content-type "$m")" ] || fail "NATS: Content-Type set (would mean structured mode): $m"
    [ "$(hv nats-msg-id "$m")" = "$(hv ce-id "$m")" ] || fail "NATS: Nats-Msg-Id is not ce-id: $m"
done <"$T/nats.jsonl"

say "a message with a content_type: its datacontenttype on both bindings, the JSON string's value as data"
xml_http=$(psql_src -c "SELECT once.send('ce.xml', to_jsonb('<order n=\"5\"/>'::text), content_type => 'application/xml')")
start_relay ce-http-xml --db "$SRC_DB" --sink "http://127.0.0.1:$(cat "$T/ce.port")/events" --poll-interval 100ms --cloudevents on
once_wait_for "the XML message" 30 lines_have_ids "$HTTP_LOG" 5 || fail "receiver: $(cat "$HTTP_LOG")"
stop_relay ce-http-xml
xml_req=$(jq -c --arg id "$xml_http" 'select(.id == $id)' "$HTTP_LOG")
jq -e '.headers["content-type"] == "application/xml" and .cloudevent.datacontenttype == "application/xml"
       and .cloudevent.data == "<order n=\"5\"/>" and .ce_error == null' <<<"$xml_req" >/dev/null ||
    fail "HTTP: the XML message arrived as $xml_req"
xml_nats=$(psql_src -c "SELECT once.send('ce.xml', to_jsonb('<order n=\"6\"/>'::text), content_type => 'application/xml')")
start_relay ce-nats-xml --db "$SRC_DB" --sink "nats://127.0.0.1:$NATS_PORT?stream=CE&subject_prefix=ce.&create_stream=1" \
    --poll-interval 100ms --cloudevents on --cloudevents-source "https://shop.example/orders"
once_wait_for "5 messages in the stream" 30 stream_has CE 5 || fail "stream CE has $(stream_msgs CE)"
stop_relay ce-nats-xml
m=$(python3 "$RELAY_LIB/nats_stream_get.py" "$NATS_PORT" CE 5) || fail "reading stream CE"
[ "$(hv ce-id "$m")" = "$xml_nats" ] || fail "NATS: message 5 is not the XML one: $m"
[ "$(hv ce-datacontenttype "$m")" = application/xml ] || fail "NATS: ce-datacontenttype: $m"
[ -z "$(hv content-type "$m")" ] || fail "NATS: Content-Type set beside ce-datacontenttype: $m"
[ "$(jq -r .data <<<"$m")" = '<order n="6"/>' ] || fail "NATS: data is not the string's value: $m"
ev=$(node "$RELAY_LIB/cloudevents_parse.js" <<<"$m")
jq -e '.datacontenttype == "application/xml" and .data == "<order n=\"6\"/>"' <<<"$ev" >/dev/null || fail "NATS: the SDK read $ev"
say "relay_cloudevents: OK"
