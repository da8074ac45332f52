#!/usr/bin/env bash
# The metrics server stays answerable under slow clients and bounds their
# time. With 30 idle or unfinished connections open, /healthz still answers within 2 s (0.2
# served 16 connections for up to 10 s each, so the 17th client got nothing), and the server
# closes the slow connections itself. A non-loopback bind address is warned about.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres
healthz_ok() { curl -sf --max-time 2 "http://127.0.0.1:$MPORT/healthz" >/dev/null; }

say "30 slow clients"
MPORT=$(free_port)
start_relay m --db "$SRC_DB" --sink stdout: --metrics "127.0.0.1:$MPORT" --poll-interval 100ms
once_wait_for "/healthz answers" 30 healthz_ok || fail "/healthz never answered"
# 2 s per /healthz; the slow connections must be gone within 15 s (the 5 s idle bound plus
# slack for a loaded machine).
out=$(python3 "$RELAY_LIB/slow_clients.py" "$MPORT" 30 2 15 2>&1) || fail "$out"
say "$out"
healthz_ok || fail "/healthz does not answer after the slow clients"
! relay_log_has m "not a loopback address" || fail "warned about a loopback address"
stop_relay m

say "non-loopback bind"
MPORT=$(free_port)
start_relay any --db "$SRC_DB" --sink stdout: --metrics "0.0.0.0:$MPORT" --poll-interval 100ms
once_wait_for "/healthz answers" 30 healthz_ok || fail "/healthz never answered on 0.0.0.0"
relay_log_has any "metrics on 0.0.0.0:$MPORT: not a loopback address" || fail "no warning for 0.0.0.0: $(cat "$T/relay-any.log")"
stop_relay any
say "relay_metrics_load: OK"
