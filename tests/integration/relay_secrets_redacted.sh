#!/usr/bin/env bash
# A relay whose sink URI carries secrets (a NATS token as userinfo,
# user:password, query parameters such as api_key/sig/token/code, a token in the path) never
# prints them: not in its log while it runs, not in an error at start, not in --check-config.
# On 0.2 the NATS token and api_key/sig/code were printed as written.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres

# Each secret is a distinct word so a leak names which form leaked.
NATS_TOKEN=NatsTokenSecret1
SECRETS=(NatsTokenSecret1 HttpPassSecret2 ApiKeySecret3 SigSecret4 TokenSecret5 CodeSecret6
         PathSecret7abcdefghijklmnop AccessTokenSecret8 DbPassSecret9)
no_secret_in() {   # FILE WHAT
    local s
    for s in "${SECRETS[@]}"; do ! grep -q "$s" "$1" || fail "$2 printed the secret $s: $(grep "$s" "$1" | head -3)"; done
}

say "NATS with token authentication"
NATS_PORT=$(free_port); NATS_MON=$(free_port)
mkdir -p "$T/nats"
nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -m "$NATS_MON" -sd "$T/nats" --auth "$NATS_TOKEN" >"$T/nats.log" 2>&1 &
BG_PIDS+=($!)
once_wait_for "nats-server" 20 curl -sf "http://127.0.0.1:$NATS_MON/healthz?js-enabled-only=true" || fail "nats-server did not start"
NATS_SINK="nats://$NATS_TOKEN@127.0.0.1:$NATS_PORT?stream=SEC&subject_prefix=sec.&create_stream=1"
psql_src -c "SELECT once.send('t.sec', '{\"n\": 1}')" >/dev/null
start_relay nats --db "$SRC_DB" --sink "$NATS_SINK" --poll-interval 100ms
once_wait_for "the message in the stream" 30 stream_has SEC 1 || fail "stream SEC has $(stream_msgs SEC)"
stop_relay nats
grep -q 'sink nats://\*\*\*@127.0.0.1' "$T/relay-nats.log" || fail "the start line does not show the redacted sink"
no_secret_in "$T/relay-nats.log" "the NATS relay's log"

say "HTTP sink with credentials in userinfo, query and path"
start_http_receiver sec
HTTP_BASE=${HTTP_URL%/hook}
HTTP_SINK="http://user:HttpPassSecret2@${HTTP_BASE#http://}/hook/PathSecret7abcdefghijklmnop?api_key=ApiKeySecret3&sig=SigSecret4&token=TokenSecret5&code=CodeSecret6&access_token=AccessTokenSecret8&tenant=t1"
DB_WITH_PASSWORD="$SRC_DB password=DbPassSecret9"
as_relay_user "$RELAY_BIN" --db "$DB_WITH_PASSWORD" --sink "$HTTP_SINK" --check-config >"$T/check.out" 2>"$T/check.err" ||
    fail "--check-config failed: $(cat "$T/check.err")"
grep -q "configuration OK" "$T/check.out" || fail "--check-config: $(cat "$T/check.out")"
grep -q "tenant=t1" "$T/check.out" || fail "--check-config hides harmless parameters too: $(cat "$T/check.out")"
no_secret_in "$T/check.out" "--check-config"
no_secret_in "$T/check.err" "--check-config (stderr)"
psql_src -c "SELECT once.send('t.sec', '{\"n\": 2}')" >/dev/null
start_relay http --db "$DB_WITH_PASSWORD" --sink "$HTTP_SINK" --poll-interval 100ms
once_wait_for "the message delivered" 30 http_has "$HTTP_LOG" 1 || fail "not delivered: $(cat "$HTTP_LOG")"
stop_relay http
grep -q "sink http://user:\*\*\*@" "$T/relay-http.log" || fail "the start line does not show the redacted sink"
no_secret_in "$T/relay-http.log" "the HTTP relay's log"

say "errors at start name the sink without its secrets"
DEAD_SINK="http://user:HttpPassSecret2@127.0.0.1:$(free_port)/hook?api_key=ApiKeySecret3&sig=SigSecret4"
rc=0; as_relay_user "$RELAY_BIN" --db "$DB_WITH_PASSWORD" --sink "$DEAD_SINK" >"$T/dead.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "cannot reach the HTTP sink" "$T/dead.out" || fail "unreachable sink: rc=$rc $(cat "$T/dead.out")"
no_secret_in "$T/dead.out" "the unreachable-sink error"
rc=0; as_relay_user "$RELAY_BIN" --db "$DB_WITH_PASSWORD" --sink "nats://$NATS_TOKEN@127.0.0.1:$NATS_PORT?stream=SEC&bogus=1" >"$T/bad.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q 'unknown URI parameter "bogus"' "$T/bad.out" || fail "bad NATS parameter: rc=$rc $(cat "$T/bad.out")"
no_secret_in "$T/bad.out" "the bad-parameter error"
say "relay_secrets_redacted: OK"
