#!/usr/bin/env bash
# Signals and systemd: SIGTERM drains in-flight work and exits 0 within the bound (nothing
# delivered twice afterwards); SIGHUP with a broken config keeps the old one running; a valid
# reload applies and names restart-only settings; READY=1 / RELOADING=1 / STOPPING=1 /
# WATCHDOG=1 reach NOTIFY_SOCKET.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres
start_http_receiver slow --delay-ms 400
python3 "$RELAY_LIB/notify_listener.py" "$T/notify.sock" "$T/notify.log" &
BG_PIDS+=($!)
once_wait_for "notify socket" 10 test -S "$T/notify.sock"

CONF="$T/relay.conf"
cat >"$CONF" <<CONF
db = $SRC_DB
sink = $HTTP_URL
batch = 50
max-in-flight = 16
poll-interval = 100ms
CONF
chmod 644 "$CONF"
send_messages 200 0
export NOTIFY_SOCKET="$T/notify.sock" WATCHDOG_USEC=2000000
start_relay sig --config "$CONF" --shutdown-timeout 5s
unset NOTIFY_SOCKET WATCHDOG_USEC
once_wait_for "READY=1" 20 grep -q "READY=1" "$T/notify.log" || fail "no READY=1"
once_wait_for "some delivered" 30 http_has "$HTTP_LOG" 20 || fail "nothing delivered"

say "SIGHUP with a broken config"
cp "$CONF" "$CONF.good"
echo "batch = 0" >>"$CONF"
kill -HUP "$(relay_child sig)"
once_wait_for "reload failure logged" 20 relay_log_has sig "reload failed, still running with the previous configuration" || fail "no reload failure"
relay_alive sig || fail "relay died on a broken reload"
# (the listener writes each datagram when it is scheduled: wait for it, do not just look)
once_wait_for "RELOADING=1" 10 grep -q "RELOADING=1" "$T/notify.log" || fail "no RELOADING=1"
before=$(http_count "$HTTP_LOG")
once_wait_for "still delivering" 30 http_has "$HTTP_LOG" $((before + 10)) || fail "stopped delivering after a broken reload"

say "SIGHUP with a valid config that also changes a restart-only setting"
sed -e 's/^batch = 50/batch = 20/' -e 's/^sink = .*/sink = stdout:/' "$CONF.good" >"$CONF"
kill -HUP "$(relay_child sig)"
once_wait_for "reload applied" 20 relay_log_has sig "reloaded configuration: batch 20" || fail "valid reload not applied"
relay_log_has sig "sink changed but only take" || fail "restart-only setting not reported"

say "SIGTERM drains"
send_messages 200 0 1001
once_wait_for "in flight" 20 bash -c "[ \$(jq -r .id '$HTTP_LOG' | wc -l) -gt 0 ]"
start=$SECONDS
stop_relay sig
[ "$RELAY_RC" = 0 ] || fail "exit code $RELAY_RC after SIGTERM"
[ $((SECONDS - start)) -le 8 ] || fail "shutdown took $((SECONDS - start))s (bound 5s + slack)"
once_wait_for "STOPPING=1" 10 grep -q "STOPPING=1" "$T/notify.log" || fail "no STOPPING=1"
once_wait_for "WATCHDOG=1" 10 grep -q "WATCHDOG=1" "$T/notify.log" || fail "no WATCHDOG=1"
# What the receiver answered before the stop was acknowledged: a new relay delivers only the rest.
delivered_before=$(jq -r 'select(.status == 200) | .id' "$HTTP_LOG" | sort -u | wc -l)
cp "$CONF.good" "$CONF"
start_relay sig2 --config "$CONF"
once_wait_for "the rest delivered" 120 http_has "$HTTP_LOG" 400 || fail "$(http_count "$HTTP_LOG") of 400 delivered"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox has $(outbox_left)"
stop_relay sig2
dups=$(( $(jq -r .id "$HTTP_LOG" | wc -l) - 400 ))
[ "$dups" = 0 ] || fail "$dups messages delivered twice after a SIGTERM drain (delivered before stop: $delivered_before)"
say "relay_signals: OK"
