#!/usr/bin/env bash
# The HTTP sink signs its requests the Standard Webhooks way, checked with the
# reference implementation (the standardwebhooks npm package, tests/integration/node) in a
# Node.js receiver (lib/webhook_receiver.js):
# - one secret from --webhook-secret-file: every request verifies with it and not with another
#   secret; webhook-id is the message id, Idempotency-Key unchanged;
# - a rotation: the old secret from a file, the new one from a systemd credential
#   ($CREDENTIALS_DIRECTORY/webhook-secret): each secret alone verifies every request;
# - captured requests replayed through the library (lib/webhook_check.js): a tampered body, a
#   moved timestamp, the request verified 10 minutes late and a wrong secret all fail;
# - the receiver example of docs/relay.md (run as written) accepts the relay's requests;
# - a receiver that refuses the signature (401) gets the message dead-lettered, not lost silently;
# - the secrets never appear in the relay's log.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
NODE_DIR="$ONCE_SOURCE_DIR/tests/integration/node"
command -v node >/dev/null || fail "node is needed (scripts/setup)"
[ -d "$NODE_DIR/node_modules/standardwebhooks" ] ||
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci in $NODE_DIR"

start_postgres

# secret FILE: a fresh whsec_ secret (32 random bytes), readable by the relay's user only.
secret() {
    echo "whsec_$(openssl rand -base64 32)" >"$T/$1"
    chmod 600 "$T/$1"
    [ "$(id -u)" = 0 ] && chown postgres: "$T/$1"
    return 0
}
mkdir -p "$T/creds"
secret old; secret new; secret wrong
cp -p "$T/new" "$T/creds/webhook-secret"
[ "$(id -u)" = 0 ] && chown -R postgres: "$T/creds"
chmod 700 "$T/creds"

# start_receiver NAME SECRET_FILE...: exports HTTP_URL, HTTP_LOG.
start_receiver() {
    local name=$1; shift
    HTTP_LOG="$T/http-$name.jsonl"; local pf="$T/http-$name.port" a=()
    : >"$HTTP_LOG"
    for s in "$@"; do a+=(--secret-file "$T/$s"); done
    node "$RELAY_LIB/webhook_receiver.js" --log "$HTTP_LOG" --port-file "$pf" "${a[@]}" >"$T/receiver-$name.log" 2>&1 &
    BG_PIDS+=($!)
    once_wait_for "webhook receiver" 20 test -s "$pf"
    HTTP_URL="http://127.0.0.1:$(cat "$pf")/hook"
}
received() { [ "$(jq -r .id "$HTTP_LOG" | sort -u | wc -l)" -ge "$1" ]; }
send3() {
    psql_src -c "SELECT once.send('wh.a', '{\"n\": 1, \"text\": \"caf\u00e9 \\\" \\\\\\\\ end\"}', 'k1')" >/dev/null
    psql_src -c "SELECT once.send('wh.b', '{\"n\": 2}')" >/dev/null
    psql_src -c "SELECT once.send('wh.a', '{\"n\": 3, \"nested\": {\"a\": [1, 2, 3]}}', 'k2')" >/dev/null
}

say "one secret from a file"
start_receiver one old wrong
send3
start_relay one --db "$SRC_DB" --sink "$HTTP_URL" --poll-interval 100ms --webhook-secret-file "$T/old"
once_wait_for "3 signed requests" 30 received 3 || fail "receiver: $(cat "$HTTP_LOG")"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox: $(psql_src -c "SELECT id, last_error FROM once.outbox")"
stop_relay one
relay_log_has one "signing requests (Standard Webhooks) with 1 secret" || fail "no signing line in the log"
[ "$(jq -s length "$HTTP_LOG")" = 3 ] || fail "expected 3 requests: $(cat "$HTTP_LOG")"
[ "$(jq -r 'select(.verified.old == true) | .id' "$HTTP_LOG" | wc -l)" = 3 ] || fail "not verified with the secret: $(jq -c .verified "$HTTP_LOG")"
[ "$(jq -r 'select(.verified.wrong == "No matching signature found") | .id' "$HTTP_LOG" | wc -l)" = 3 ] ||
    fail "verified with another secret: $(jq -c .verified "$HTTP_LOG")"
[ "$(jq -r 'select(.headers["webhook-id"] == .headers["idempotency-key"]) | .id' "$HTTP_LOG" | wc -l)" = 3 ] ||
    fail "webhook-id is not the message id"
[ "$(jq -r '.headers["webhook-signature"]' "$HTTP_LOG" | grep -cE '^v1,[A-Za-z0-9+/]{43}=$')" = 3 ] ||
    fail "signature format: $(jq -r '.headers["webhook-signature"]' "$HTTP_LOG")"
ONE_LOG=$HTTP_LOG

say "captured requests replayed through the library"
node "$RELAY_LIB/webhook_check.js" "$ONE_LOG" "$T/old" "$T/wrong" >"$T/check.txt" || fail "webhook_check.js: $(cat "$T/check.txt")"
cat "$T/check.txt" | sed 's/^/  /'
[ "$(grep -c ' valid pass$' "$T/check.txt")" = 3 ] || fail "valid requests did not verify"
for check in tampered-body tampered-ts replayed-late wrong-secret; do
    [ "$(grep -c " $check fail: " "$T/check.txt")" = 3 ] || fail "$check was not refused by the library"
done
grep -q "replayed-late fail: Message timestamp too old" "$T/check.txt" || fail "late replay refused for another reason"

say "rotation: the old secret from a file, the new one from a systemd credential"
start_receiver rot old new wrong
send3
CREDENTIALS_DIRECTORY="$T/creds" start_relay rot --db "$SRC_DB" --sink "$HTTP_URL" --poll-interval 100ms --webhook-secret-file "$T/old"
once_wait_for "3 signed requests" 30 received 3 || fail "receiver: $(cat "$HTTP_LOG")"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox: $(psql_src -c "SELECT id, last_error FROM once.outbox")"
stop_relay rot
relay_log_has rot "with 2 secret(s)" || fail "the credential was not loaded"
[ "$(jq -r 'select(.verified.old == true and .verified.new == true and .verified.wrong != true) | .id' "$HTTP_LOG" | wc -l)" = 3 ] ||
    fail "each secret alone must verify: $(jq -c .verified "$HTTP_LOG")"
[ "$(jq -r '.headers["webhook-signature"]' "$HTTP_LOG" | grep -cE '^v1,[^ ]+ v1,[^ ]+$')" = 3 ] ||
    fail "two space-separated signatures expected: $(jq -r '.headers["webhook-signature"]' "$HTTP_LOG")"
node "$RELAY_LIB/webhook_check.js" "$HTTP_LOG" "$T/new" "$T/wrong" >"$T/check2.txt" || fail "webhook_check.js"
[ "$(grep -c ' valid pass$' "$T/check2.txt")" = 3 ] && [ "$(grep -c ' fail: ' "$T/check2.txt")" = 12 ] ||
    fail "rotation replay checks: $(cat "$T/check2.txt")"

say "the receiver example of docs/relay.md"
awk '/^#### Signed requests/ {s = 1} s && /^```js/ {c = 1; next} c && /^```/ {exit} c {print}' \
    "$ONCE_SOURCE_DIR/docs/relay.md" >"$T/doc_receiver.js"
grep -q "wh.verify" "$T/doc_receiver.js" || fail "no receiver example in docs/relay.md"
DOC_PORT=$(free_port)
WEBHOOK_SECRET=$(cat "$T/old") PORT=$DOC_PORT NODE_PATH="$NODE_DIR/node_modules" node "$T/doc_receiver.js" >"$T/doc_receiver.log" 2>&1 &
BG_PIDS+=($!)
doc_up() { [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$DOC_PORT/")" = 401 ]; }
once_wait_for "the docs' receiver" 20 doc_up || fail "docs' receiver: $(cat "$T/doc_receiver.log")"
send3
start_relay doc --db "$SRC_DB" --sink "http://127.0.0.1:$DOC_PORT/hook" --poll-interval 100ms --webhook-secret-file "$T/old"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox: $(psql_src -c "SELECT id, last_error FROM once.outbox")"
stop_relay doc
[ "$(psql_src -c "SELECT count(*) FROM once.dead_letters")" = 0 ] || fail "the docs' receiver refused: $(psql_src -c "SELECT last_error FROM once.dead_letters")"

say "a receiver that refuses the signature"
start_receiver refuse wrong
psql_src -c "SELECT once.send('wh.refused', '{\"n\": 4}')" >/dev/null
start_relay refuse --db "$SRC_DB" --sink "$HTTP_URL" --poll-interval 100ms --webhook-secret-file "$T/old"
dead() { [ "$(psql_src -c "SELECT count(*) FROM once.dead_letters WHERE last_error LIKE 'HTTP 401%'")" = 1 ]; }
once_wait_for "the refused message dead-lettered" 30 dead || fail "dead letters: $(psql_src -c "SELECT * FROM once.dead_letters")"
stop_relay refuse

say "secrets never logged; no secret on the command line"
for s in old new wrong; do
    key=$(sed 's/^whsec_//' "$T/$s")
    ! grep -qF -- "$key" "$T"/relay-*.log || fail "secret $s in a relay log"
done
out=$(as_relay_user "$RELAY_BIN" --db "$SRC_DB" --sink "$HTTP_URL" --webhook-secret "$(cat "$T/old")" 2>&1) && fail "accepted a secret on the command line"
grep -q "not the secret itself" <<<"$out" || fail "unexpected error: $out"
! grep -qF -- "$(sed 's/^whsec_//' "$T/old")" <<<"$out" || fail "the refusal repeats the secret"
echo "whsec_dG9vc2hvcnQ=" >"$T/short"; chmod 644 "$T/short"
out=$(as_relay_user "$RELAY_BIN" --db "$SRC_DB" --sink "$HTTP_URL" --webhook-secret-file "$T/short" --check-config 2>&1) &&
    fail "accepted a short secret"
grep -q "too short" <<<"$out" && ! grep -q "dG9vc2hvcnQ" <<<"$out" || fail "short secret: $out"
grep -q "can be read by every user" <<<"$out" || fail "no warning for a world-readable secret file: $out"
say "relay_webhooks: OK"
