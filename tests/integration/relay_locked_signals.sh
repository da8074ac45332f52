#!/usr/bin/env bash
# SIGTERM in the locked claim mode: the open batches are finished (published, settled,
# committed) within --shutdown-timeout, so after the exit the outbox holds exactly what the
# receiver did not get; with a bound too short for the slow receiver the open batches are
# rolled back instead: the relay still exits 0 within the bound, and the outbox has every
# uncommitted message back with no attempt counted. A third relay then delivers the rest. A
# database without once.claim_locked makes a locked relay warn and fall back to leases.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N=400

start_postgres
start_http_receiver slow --delay-ms 300
send_messages "$N" 0
ARGS=(--db "$SRC_DB" --sink "$HTTP_URL" --claim-mode locked --batch 50 --max-in-flight 16 --poll-interval 100ms --maintenance off)
holds_claims() {   # a transaction of relay $1 has deleted claimed rows and not committed yet
    [ "$(psql_src -c "SELECT count(*) FROM pg_stat_activity WHERE datname = 'src' AND application_name = 'once-relay $1' AND backend_xid IS NOT NULL")" -ge 1 ]
}
no_sessions() { [ "$(psql_src -c "SELECT count(*) FROM pg_stat_activity WHERE datname = 'src' AND application_name = 'once-relay $1'")" = 0 ]; }
delivered() { jq -r 'select(.status == 200) | .id' "$HTTP_LOG" | sort -u; }
no_attempts() { [ "$(psql_src -c "SELECT count(*) FROM once.outbox WHERE attempt > 0 OR relay IS NOT NULL")" = 0 ]; }

say "SIGTERM with time to finish: the open batches commit"
start_relay a "${ARGS[@]}" --shutdown-timeout 20s
once_wait_for "some delivered" 30 http_has "$HTTP_LOG" 20 || fail "nothing delivered"
once_wait_for "relay a inside a batch" 30 holds_claims a || fail "relay a never holds claims"
start=$SECONDS
stop_relay a
[ "$RELAY_RC" = 0 ] || fail "exit code $RELAY_RC after SIGTERM"
[ $((SECONDS - start)) -le 22 ] || fail "shutdown took $((SECONDS - start))s (bound 20s)"
relay_log_has a "claim mode locked" || fail "relay a did not run in the locked mode"
! relay_log_has a "rolled back" || fail "relay a rolled back although it had time to finish"
once_wait_for "relay a's sessions to end" 30 no_sessions a || fail "relay a's sessions linger"
got=$(delivered | wc -l); left=$(outbox_left)
say "relay a: $got delivered, $left left in the outbox"
[ $((got + left)) = "$N" ] || fail "$got delivered + $left in the outbox != $N: the open batches were not committed whole"
no_attempts || fail "messages with an attempt counted after a clean stop"

say "SIGTERM with a bound too short for the slow receiver: the open batches roll back"
start_relay b "${ARGS[@]}" --shutdown-timeout 1s
once_wait_for "relay b inside a batch" 30 holds_claims b || fail "relay b never holds claims"
start=$SECONDS
stop_relay b
[ "$RELAY_RC" = 0 ] || fail "exit code $RELAY_RC after SIGTERM"
[ $((SECONDS - start)) -le 4 ] || fail "shutdown took $((SECONDS - start))s (bound 1s)"
relay_log_has b "not settled within the drain bound" || fail "relay b did not roll back at the bound"
once_wait_for "relay b's sessions to end" 30 no_sessions b || fail "relay b's sessions linger"
no_attempts || fail "a rolled-back batch counted an attempt"
# Everything committed was delivered: no message left the outbox without reaching the receiver.
missing=$(( N - $(psql_src -c "SELECT count(*) FROM once.outbox") - $(delivered | wc -l) ))
[ "$missing" -le 0 ] || fail "$missing message(s) left the outbox without being delivered"

say "a third relay delivers the rest"
start_relay c "${ARGS[@]}"
once_wait_for "all $N delivered" 120 http_has "$HTTP_LOG" "$N" || fail "$(http_count "$HTTP_LOG") of $N delivered"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox has $(outbox_left)"
stop_relay c
[ "$(delivered | wc -l)" = "$N" ] || fail "$(delivered | wc -l) distinct messages delivered, want $N"

say "without once.claim_locked (pg_once SQL before 0.2) the relay warns and uses the leased mode"
psql_src -c "ALTER EXTENSION pg_once DROP FUNCTION once.claim_locked(text, integer, text[])" \
         -c "DROP FUNCTION once.claim_locked(text, integer, text[])"
send_messages 20 0 5001
start_relay d "${ARGS[@]}"
once_wait_for "the 20 new ones delivered" 60 http_has "$HTTP_LOG" $((N + 20)) || fail "$(http_count "$HTTP_LOG") of $((N + 20)) delivered"
stop_relay d
relay_log_has d "using the leased claim mode" || fail "no fallback warning"
say "relay_locked_signals: OK"
