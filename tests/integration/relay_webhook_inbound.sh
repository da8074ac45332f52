#!/usr/bin/env bash
# once-relay --listen-webhooks delivers signed webhooks into the inbox of its --db, each once.
# Requests are signed by the Standard Webhooks reference library and CloudEvents built by the
# CloudEvents SDK (lib/webhook_send.js, tests/integration/node); the handler counts its effects
# in the database (webhook_effects):
# - one webhook sent 3 times, and another 8 times at once: 200 each time, one effect each;
# - a tampered body, a wrong secret, a timestamp 6 minutes old or ahead, missing headers: 401,
#   and the handler never ran (no effect, no inbox row, no failure recorded);
# - a rotation: a secret from a file and one from the systemd credential both verify;
# - a handler that fails: 503 with Retry-After, the failure counted; fixed, the resend: 200, once;
# - a message that failed max_attempts times: 422 (poison), the handler not run again;
# - a body over --webhooks-max-body: 413; no topic: 400; a topic from the body's "type";
# - more requests than --webhooks-concurrency: 503 with Retry-After while one is delivered;
# - a handler slower than --sink-timeout, a topic without a handler: 503, then 200 once fixed;
# - CloudEvents in binary and structured mode: id, type, data and attributes reach the handler;
# - refusals are logged at most once a second, with a count; the secrets never appear in the
#   log; SIGTERM exits 0.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
NODE_DIR="$ONCE_SOURCE_DIR/tests/integration/node"
command -v node >/dev/null || fail "node is needed (scripts/setup)"
[ -d "$NODE_DIR/node_modules/standardwebhooks" ] && [ -d "$NODE_DIR/node_modules/cloudevents" ] ||
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci in $NODE_DIR"

start_postgres
secret() {
    echo "whsec_$(openssl rand -base64 32)" >"$T/$1"
    chmod 600 "$T/$1"
    [ "$(id -u)" = 0 ] && chown postgres: "$T/$1"
    return 0
}
secret old; secret new; secret wrong
mkdir -p "$T/creds"; cp -p "$T/new" "$T/creds/inbound-webhook-secret"
[ "$(id -u)" = 0 ] && chown -R postgres: "$T/creds"
chmod 700 "$T/creds"

# The inbox database (dst): a handler that records every effect, can be told to fail, and
# waits for advisory lock 4242 on topic slow.op (to hold a request in delivery).
psql_dst >/dev/null <<'SQL'
SELECT once.unsubscribe('>');
CREATE TABLE webhook_effects (n bigserial, source text, id text, topic text, payload jsonb, headers jsonb);
CREATE TABLE handler_switch (fail boolean NOT NULL);
INSERT INTO handler_switch VALUES (false);
CREATE FUNCTION public.on_webhook(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT fail FROM public.handler_switch) THEN RAISE EXCEPTION 'handler broken on purpose'; END IF;
    IF msg.topic = 'slow.op' THEN PERFORM pg_advisory_xact_lock(4242); END IF;
    INSERT INTO public.webhook_effects (source, id, topic, payload, headers)
    VALUES (msg.source, msg.message_id, msg.topic, msg.payload, msg.headers);
END $$;
SELECT once.subscribe('>', 'public.on_webhook(once.inbound)'::regprocedure);
SQL
DST_DB="host=$PGHOST port=$PGPORT user=postgres dbname=dst"

PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
listening() { [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/webhooks")" = 405 ]; }
start_receiver() {   # NAME ARGS...
    local name=$1; shift
    start_relay "$name" --db "$DST_DB" --listen-webhooks "127.0.0.1:$PORT" --webhooks-source payments "$@"
    once_wait_for "the webhook listener" 20 listening || fail "receiver $name did not start"
}
# send ARGS...: one request through lib/webhook_send.js; sets STATUS, ANSWER (the JSON line).
send() {
    ANSWER=$(node "$RELAY_LIB/webhook_send.js" --url "$URL" --secret-file "$T/old" "$@")
    STATUS=$(jq -r .status <<<"$ANSWER")
}
expect() {   # STATUS ARGS...
    local want=$1; shift
    send "$@"
    [ "$STATUS" = "$want" ] || fail "expected $want for $*: $ANSWER"
}
effects() { psql_dst -c "SELECT count(*) FROM webhook_effects WHERE id = '$1'"; }
never_ran() {   # ID: no effect, no inbox row, no recorded failure
    [ "$(effects "$1")" = 0 ] || fail "the handler ran for refused $1"
    [ "$(psql_dst -c "SELECT (SELECT count(*) FROM once.inbox WHERE message_id = '$1') + (SELECT count(*) FROM once.inbox_failures WHERE message_id = '$1')")" = 0 ] ||
        fail "the inbox recorded refused $1"
}

say "one webhook sent three times, another eight times at once: one effect each"
start_receiver hook --webhooks-secret-file "$T/old" --webhooks-max-body 4096
for i in 1 2 3; do expect 200 --id evt_1 --path /webhooks/invoice.paid --body '{"amount": 1200, "big": 12345678901234567890}'; done
[ "$(effects evt_1)" = 1 ] || fail "evt_1 took effect $(effects evt_1) times"
[ "$(psql_dst -c "SELECT source || ' ' || topic || ' ' || (payload->>'amount') || ' ' || (payload->'big')::text FROM webhook_effects WHERE id = 'evt_1'")" = "payments invoice.paid 1200 12345678901234567890" ] ||
    fail "evt_1 as the handler saw it: $(psql_dst -c "SELECT * FROM webhook_effects")"
[ -n "$(psql_dst -c "SELECT headers->>'webhook-timestamp' FROM webhook_effects WHERE id = 'evt_1'")" ] || fail "no webhook-timestamp header"
SENDERS=()
for i in $(seq 8); do
    node "$RELAY_LIB/webhook_send.js" --url "$URL" --secret-file "$T/old" --id evt_2 --path /webhooks/invoice.paid --body '{"n": 2}' >"$T/par-$i.json" &
    SENDERS+=($!)
done
for p in "${SENDERS[@]}"; do wait "$p"; done
[ "$(cat "$T"/par-*.json | jq -r .status | sort -u)" = 200 ] || fail "parallel sends: $(cat "$T"/par-*.json)"
[ "$(effects evt_2)" = 1 ] || fail "evt_2 took effect $(effects evt_2) times"

say "refused: tampered body, wrong secret, old or future timestamp, missing headers (401)"
expect 401 --id bad_1 --path /webhooks/invoice.paid --body '{"n": 1}' --tamper
expect 401 --id bad_2 --path /webhooks/invoice.paid --secret-file "$T/wrong"
grep -q "no matching signature" <<<"$ANSWER" || fail "wrong secret: $ANSWER"
expect 401 --id bad_3 --path /webhooks/invoice.paid --ts-offset -360
grep -q "too old" <<<"$ANSWER" || fail "old timestamp: $ANSWER"
expect 401 --id bad_4 --path /webhooks/invoice.paid --ts-offset 360
expect 401 --id bad_5 --path /webhooks/invoice.paid --omit webhook-signature
expect 401 --id bad_6 --path /webhooks/invoice.paid --omit webhook-timestamp
expect 401 --id bad_7 --path /webhooks/invoice.paid --omit webhook-id
for i in 1 2 3 4 5 6 7; do never_ran "bad_$i"; done
# anyone can send refused requests: 50 in a burst log a few lines, which count the others
before=$(grep -c "webhook refused" "$T/relay-hook.log")
urls=(); for i in $(seq 50); do urls+=("$URL/webhooks/a.b"); done
curl -s -o /dev/null -X POST -H 'Content-Type: application/json' --data '{}' "${urls[@]}"
# (one more refusal per poll: the next line is due a second after the last one)
refused_logged() {
    curl -s -o /dev/null -X POST -H 'Content-Type: application/json' --data '{}' "$URL/webhooks/a.b"
    grep -q "more refused since the previous line" "$T/relay-hook.log"
}
once_wait_for "the refusals counted" 10 refused_logged || fail "no count of held-back refusals: $(tail -5 "$T/relay-hook.log")"
[ $(( $(grep -c "webhook refused" "$T/relay-hook.log") - before )) -lt 20 ] || fail "every refusal of a burst logged"
# within the tolerance, either way
expect 200 --id ok_skew_1 --path /webhooks/invoice.paid --ts-offset -240
expect 200 --id ok_skew_2 --path /webhooks/invoice.paid --ts-offset 240

say "malformed requests: 400, 404, 413, 415; the topic from the body's type"
expect 413 --id big_1 --path /webhooks/invoice.paid --body "{\"pad\": \"$(head -c 5000 /dev/zero | tr '\0' x)\"}"
never_ran big_1
head -c 5000 /dev/zero | tr '\0' x >"$T/big.txt"   # chunked: no Content-Length to refuse it by
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Transfer-Encoding: chunked' -H 'Content-Type: application/json' \
     --data-binary @"$T/big.txt" "$URL/webhooks/a.b")" = 413 ] || fail "a chunked body over the limit"
expect 400 --id notopic_1 --path /webhooks --body '{"data": {}}'
expect 400 --id badtopic_1 --path '/webhooks/a..b'
expect 400 --id notjson_1 --path /webhooks/a.b --body 'not json'
expect 415 --id text_1 --path /webhooks/a.b --content-type text/plain
expect 404 --id path_1 --path /hooks/a.b
for i in big_1 notopic_1 badtopic_1 notjson_1 text_1 path_1; do never_ran "$i"; done
expect 200 --id typed_1 --path /webhooks --body '{"type": "customer.created", "data": {"id": 7}}'
[ "$(psql_dst -c "SELECT topic FROM webhook_effects WHERE id = 'typed_1'")" = customer.created ] || fail "topic from type"

say "a failing handler: 503 + Retry-After, counted; fixed, the resend is processed once"
psql_dst -c "UPDATE handler_switch SET fail = true"
expect 503 --id fail_1 --path /webhooks/invoice.paid
[ "$(jq -r .retry_after <<<"$ANSWER")" -gt 0 ] || fail "no Retry-After: $ANSWER"
! grep -q "broken on purpose" <<<"$ANSWER" || fail "the handler's error reached the sender: $ANSWER"
[ "$(effects fail_1)" = 0 ] || fail "effect of a failed handler"
[ "$(psql_dst -c "SELECT attempts FROM once.inbox_failures WHERE source = 'payments' AND message_id = 'fail_1'")" = 1 ] ||
    fail "the failure was not recorded: $(psql_dst -c "SELECT * FROM once.inbox_failures")"
relay_log_has hook "broken on purpose" || fail "the handler's error is not in the log"
psql_dst -c "UPDATE handler_switch SET fail = false"
expect 200 --id fail_1 --path /webhooks/invoice.paid
expect 200 --id fail_1 --path /webhooks/invoice.paid
[ "$(effects fail_1)" = 1 ] || fail "fail_1 after the fix took effect $(effects fail_1) times"

say "poison after max_attempts: 422, the handler not run again"
psql_dst -c "SELECT once.inbox_configure('payments', '7 days', 2)" >/dev/null
psql_dst -c "UPDATE handler_switch SET fail = true"
expect 503 --id poison_1 --path /webhooks/invoice.paid
expect 503 --id poison_1 --path /webhooks/invoice.paid
psql_dst -c "UPDATE handler_switch SET fail = false"
expect 422 --id poison_1 --path /webhooks/invoice.paid
[ "$(effects poison_1)" = 0 ] || fail "a poison message ran"
[ "$(psql_dst -c "SELECT count(*) FROM once.inbox_poison WHERE message_id = 'poison_1'")" = 1 ] || fail "not in once.inbox_poison"
psql_dst -c "SELECT once.inbox_retry('payments', 'poison_1')" >/dev/null
expect 200 --id poison_1 --path /webhooks/invoice.paid
[ "$(effects poison_1)" = 1 ] || fail "poison_1 after inbox_retry"

say "CloudEvents, binary and structured (the CloudEvents SDK)"
expect 200 --mode ce-binary --id ce_b1 --type order.created --body '{"order": 42}'
expect 200 --mode ce-binary --id ce_b1 --type order.created --body '{"order": 42}'
expect 200 --mode ce-structured --id ce_s1 --type order.shipped --body '{"order": 43, "n": 1.50}'
[ "$(effects ce_b1)" = 1 ] && [ "$(effects ce_s1)" = 1 ] || fail "CloudEvents effects: $(psql_dst -c "SELECT id, topic FROM webhook_effects")"
[ "$(psql_dst -c "SELECT topic || ' ' || payload::text || ' ' || (headers->>'ce-source') || ' ' || (headers->>'ce-subject') FROM webhook_effects WHERE id = 'ce_b1'")" = 'order.created {"order": 42} /tests/webhook_send order 42' ] ||
    fail "binary event: $(psql_dst -c "SELECT topic, payload, headers FROM webhook_effects WHERE id = 'ce_b1'")"
[ "$(psql_dst -c "SELECT topic || ' ' || payload::text || ' ' || (headers->>'ce-source') FROM webhook_effects WHERE id = 'ce_s1'")" = 'order.shipped {"n": 1.5, "order": 43} /tests/webhook_send' ] ||
    fail "structured event: $(psql_dst -c "SELECT topic, payload, headers FROM webhook_effects WHERE id = 'ce_s1'")"
expect 401 --mode ce-structured --id ce_s2 --type order.shipped --tamper
never_ran ce_s2
stop_relay hook
[ "$RELAY_RC" = 0 ] || fail "SIGTERM: exit $RELAY_RC"

say "concurrency limit: 503 + Retry-After while a request is being delivered"
start_receiver busy --webhooks-secret-file "$T/old" --webhooks-concurrency 1
psql_dst -c "SELECT pg_advisory_lock(4242), pg_sleep(120)" >/dev/null 2>&1 &
HOLDER=$!
BG_PIDS+=($HOLDER)
lock_held() { [ "$(psql_dst -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND granted")" = 1 ]; }
once_wait_for "advisory lock held" 20 lock_held || fail "lock holder"
node "$RELAY_LIB/webhook_send.js" --url "$URL" --secret-file "$T/old" --id slow_1 --path /webhooks/slow.op >"$T/slow.json" &
SLOW=$!
handler_waits() { [ "$(psql_dst -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted")" = 1 ]; }
once_wait_for "the slow handler waiting" 20 handler_waits || fail "slow request not in delivery"
expect 503 --id fast_1 --path /webhooks/invoice.paid
[ "$(jq -r .retry_after <<<"$ANSWER")" -gt 0 ] || fail "no Retry-After on the limit: $ANSWER"
grep -q "concurrency" <<<"$ANSWER" || fail "limit answer: $ANSWER"
never_ran fast_1
psql_dst -c "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND granted" >/dev/null
wait "$SLOW"
[ "$(jq -r .status "$T/slow.json")" = 200 ] || fail "the slow request: $(cat "$T/slow.json")"
expect 200 --id fast_1 --path /webhooks/invoice.paid
stop_relay busy

say "a handler slower than --sink-timeout, and no handler subscribed: 503, nothing recorded but the failure"
start_receiver slow --webhooks-secret-file "$T/old" --sink-timeout 1s
psql_dst -c "SELECT pg_advisory_lock(4242), pg_sleep(120)" >/dev/null 2>&1 &
BG_PIDS+=($!)
once_wait_for "advisory lock held" 20 lock_held || fail "lock holder"
expect 503 --id slow_2 --path /webhooks/slow.op
[ "$(effects slow_2)" = 0 ] || fail "slow_2 took effect"
relay_log_has slow "slow_2.*statement timeout" || fail "no statement timeout in the log: $(cat "$T/relay-slow.log")"
psql_dst -c "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND granted" >/dev/null
psql_dst -c "SELECT once.unsubscribe('>')" >/dev/null
expect 503 --id nosub_1 --path /webhooks/invoice.paid
never_ran nosub_1
relay_log_has slow 'nosub_1.*no handler subscribed' || fail "no_handler not in the log"
psql_dst -c "SELECT once.subscribe('>', 'public.on_webhook(once.inbound)'::regprocedure)" >/dev/null
expect 200 --id nosub_1 --path /webhooks/invoice.paid
[ "$(effects nosub_1)" = 1 ] || fail "nosub_1 after the subscription"
stop_relay slow

say "rotation: the old secret from a file, the new one from the systemd credential"
CREDENTIALS_DIRECTORY="$T/creds" start_receiver rot --webhooks-secret-file "$T/old"
relay_log_has rot "with 2 secret(s)" || fail "two secrets expected: $(cat "$T/relay-rot.log")"
expect 200 --id rot_old --path /webhooks/invoice.paid
expect 200 --id rot_new --path /webhooks/invoice.paid --secret-file "$T/new"
expect 401 --id rot_wrong --path /webhooks/invoice.paid --secret-file "$T/wrong"
stop_relay rot
CREDENTIALS_DIRECTORY="$T/creds" start_receiver cred
relay_log_has cred "with 1 secret(s)" || fail "the credential alone: $(cat "$T/relay-cred.log")"
expect 200 --id cred_new --path /webhooks/invoice.paid --secret-file "$T/new"
expect 401 --id cred_old --path /webhooks/invoice.paid
stop_relay cred
never_ran rot_wrong; never_ran cred_old

say "--check-config; no secret: refused at start; secrets never logged"
out=$(as_relay_user "$RELAY_BIN" --db "$DST_DB" --listen-webhooks "127.0.0.1:$(free_port)" --webhooks-secret-file "$T/old" --check-config 2>&1) ||
    fail "--check-config: $out"
grep -q "configuration OK (inbox database .*1 secret(s))" <<<"$out" || fail "--check-config: $out"
out=$(as_relay_user "$RELAY_BIN" --db "$DST_DB" --listen-webhooks "127.0.0.1:$(free_port)" 2>&1) && fail "started without a secret"
grep -q "needs the senders' secret" <<<"$out" || fail "no-secret message: $out"
echo "whsec_dG9vc2hvcnQ=" >"$T/short"; chmod 600 "$T/short"; [ "$(id -u)" = 0 ] && chown postgres: "$T/short"
out=$(as_relay_user "$RELAY_BIN" --db "$DST_DB" --listen-webhooks "127.0.0.1:$(free_port)" --webhooks-secret-file "$T/short" 2>&1) &&
    fail "started with a short secret"
grep -q "too short.*(in $T/short)" <<<"$out" && ! grep -q "dG9vc2hvcnQ" <<<"$out" || fail "short secret: $out"
for s in old new wrong; do
    key=$(sed 's/^whsec_//' "$T/$s")
    ! grep -qF -- "$key" "$T"/relay-*.log || fail "secret $s in a relay log"
done
! grep -q "v1," "$T"/relay-*.log || fail "a signature in a relay log"
say "relay_webhook_inbound: OK"
