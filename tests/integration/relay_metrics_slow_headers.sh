#!/usr/bin/env bash
# The relay's metrics listener bounds the time of a whole request, not only silence
# (docs/security.md, "The metrics listener"): 300 connections from three addresses send a
# header line every second for 15 s without finishing a request (reopened when closed, at
# most 3000 in all). Throughout, /healthz from another address answers 200 within 2 s, and
# the server closes each trickling connection within 8 s (its 5 s bound plus slack).
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres
healthz_ok() { curl -sf --max-time 2 "http://127.0.0.1:$MPORT/healthz" >/dev/null; }
MPORT=$(free_port)
start_relay m --db "$SRC_DB" --sink stdout: --metrics "127.0.0.1:$MPORT" --poll-interval 100ms
once_wait_for "/healthz answers" 30 healthz_ok || fail "/healthz never answered"

say "300 trickling connections for 15 s"
out=$(python3 "$RELAY_LIB/trickle_clients.py" "$MPORT" 300 15 8 2>&1) || fail "$out"
say "$out"
healthz_ok || fail "/healthz does not answer after the trickling clients"
stop_relay m
say "relay_metrics_slow_headers: OK"
