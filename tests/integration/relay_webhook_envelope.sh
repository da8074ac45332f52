#!/usr/bin/env bash
# The http sink's envelope body (--http-body envelope, sinks/webhook_envelope.hpp): a Standard
# Webhooks signature covers webhook-id, webhook-timestamp and the body, not X-Once-Topic,
# X-Once-Key or the producer's headers. With the envelope the topic ("type"), key and headers
# are in the signed body. Checked with the reference implementation (the standardwebhooks npm
# package) on requests captured from a real relay (lib/webhook_envelope_check.js):
# - each request verifies, and the verified body holds type = topic, key, headers, data =
#   payload, id and timestamp;
# - changing the type, the key or the headers in the body breaks verification, while changing
#   X-Once-Topic does not (which is why a receiver must read them from the body);
# - without the option the body is the payload, as before.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
NODE_DIR="$ONCE_SOURCE_DIR/tests/integration/node"
command -v node >/dev/null || fail "node is needed (scripts/setup)"
[ -d "$NODE_DIR/node_modules/standardwebhooks" ] ||
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci in $NODE_DIR"

start_postgres
echo "whsec_$(openssl rand -base64 32)" >"$T/secret"
chmod 600 "$T/secret"
[ "$(id -u)" = 0 ] && chown postgres: "$T/secret"

start_receiver() {
    HTTP_LOG="$T/http-$1.jsonl"; local pf="$T/http-$1.port"
    : >"$HTTP_LOG"
    node "$RELAY_LIB/webhook_receiver.js" --log "$HTTP_LOG" --port-file "$pf" --secret-file "$T/secret" >"$T/receiver-$1.log" 2>&1 &
    BG_PIDS+=($!)
    once_wait_for "webhook receiver" 20 test -s "$pf"
    HTTP_URL="http://127.0.0.1:$(cat "$pf")/hook"
}
received() { [ "$(jq -r .id "$HTTP_LOG" | sort -u | wc -l)" -ge "$1" ]; }

say "envelope body"
start_receiver env
keyed_id=$(psql_src -c "SELECT once.send('orders.created', '{\"n\": 1}', 'order-7', headers => '{\"tenant\": \"a\"}')")
plain_id=$(psql_src -c "SELECT once.send('orders.noted', '{\"n\": 2}')")
start_relay env --db "$SRC_DB" --sink "$HTTP_URL" --poll-interval 100ms --webhook-secret-file "$T/secret" --http-body envelope
once_wait_for "2 signed requests" 30 received 2 || fail "receiver: $(cat "$HTTP_LOG") relay: $(tail -5 "$T/relay-env.log")"
stop_relay env
node "$RELAY_LIB/webhook_envelope_check.js" "$HTTP_LOG" "$T/secret" >"$T/check.jsonl" || fail "webhook_envelope_check.js failed"
k=$(jq -c "select(.id == \"$keyed_id\")" "$T/check.jsonl")
[ -n "$k" ] || fail "no verified request for $keyed_id: $(cat "$T/check.jsonl")"
[ "$(jq -r .valid <<<"$k")" = pass ] || fail "the request does not verify: $k"
[ "$(jq -r '[.type, .key, .headers.tenant, (.data.n|tostring), .x_once_topic] | join(" ")' <<<"$k")" = \
  "orders.created order-7 a 1 orders.created" ] || fail "the signed body does not hold the topic, key, headers and payload: $k"
[ "$(jq -r '.timestamp | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T")' <<<"$k")" = true ] || fail "timestamp: $k"
for t in tampered_type tampered_key tampered_headers; do
    jq -r ".$t" <<<"$k" | grep -q '^fail: No matching signature found' || fail "$t still verifies: $k"
done
[ "$(jq -r .header_topic_swapped <<<"$k")" = pass ] || fail "expected X-Once-Topic to be outside the signature: $k"
p=$(jq -c "select(.id == \"$plain_id\")" "$T/check.jsonl")
[ "$(jq -r '[.valid, .type, (.key|tostring), (.headers|tostring)] | join(" ")' <<<"$p")" = "pass orders.noted null null" ] ||
    fail "the unkeyed message's envelope: $p"

say "the default body is the payload"
start_receiver plain
id=$(psql_src -c "SELECT once.send('orders.created', '{\"n\": 3}', 'order-8')")
start_relay plain --db "$SRC_DB" --sink "$HTTP_URL" --poll-interval 100ms --webhook-secret-file "$T/secret"
once_wait_for "1 signed request" 30 received 1 || fail "receiver: $(cat "$HTTP_LOG")"
stop_relay plain
[ "$(jq -r "select(.id == \"$id\") | .body_b64" "$HTTP_LOG" | base64 -d | jq -c .)" = '{"n":3}' ] ||
    fail "the default body is not the payload: $(cat "$HTTP_LOG")"
say "relay_webhook_envelope: the signed envelope holds topic, key and headers; tampering with them breaks verification"
