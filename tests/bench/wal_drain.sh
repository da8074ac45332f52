#!/usr/bin/env bash
# Measurement: once-relay --sink stdout: (to /dev/null) draining a backlog committed before it
# starts, --transport wal (the messages in the WAL, read from the slot) against the table
# (--transport table, the default claim mode), same server, same run, each ROUNDS times.
# Time: from the relay's start to once_relay_acked_total reaching the backlog (polled every
# 20 ms on /metrics), so it includes connecting. Usage: tests/bench/wal_drain.sh
# (BACKLOG=100000 ROUNDS=2; ONCE_STAGE_DIR, ONCE_BUILD_DIR, ONCE_SOURCE_DIR as for the tests).
set -euo pipefail
source "$(dirname "$0")/../integration/lib/relay_common.sh"
BACKLOG=${BACKLOG:-100000}
ROUNDS=${ROUNDS:-2}
start_postgres fsync=off wal_level=logical
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --create-wal-slot >/dev/null
backlog() {   # $1: table | wal
    for ((b = 0; b < BACKLOG / 1000; b++)); do
        echo "SET once.transport = '$1'; SELECT count(*) FROM (SELECT once.send('t.d', jsonb_build_object('n', n)) FROM generate_series(1, 1000) n) s;"
    done | psql -X -q -At -d src -v ON_ERROR_STOP=1 >/dev/null
}
drain() {   # $1: transport; prints seconds
    local port; port=$(free_port)
    local t0; t0=$(date +%s.%N)
    "${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --sink stdout: --transport "$1" --batch 1000 --metrics "127.0.0.1:$port" \
        --log-level warn >/dev/null 2>>"$T/drain.log" &
    local pid=$!
    local acked=0
    while [ "${acked:-0}" -lt "$BACKLOG" ]; do
        sleep 0.02
        acked=$(curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | awk '$1 == "once_relay_acked_total" { print $2 }')
    done
    local t1; t1=$(date +%s.%N)
    kill -TERM "$pid"; wait "$pid" || true
    awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' 
}
for ((r = 1; r <= ROUNDS; r++)); do
    for tr in table wal; do
        backlog "$tr"
        s=$(drain "$tr")
        printf '%s round %d: %d messages in %.2f s = %.0f msgs/s\n' "$tr" "$r" "$BACKLOG" "$s" "$(awk -v n="$BACKLOG" -v s="$s" 'BEGIN { print n / s }')"
    done
done
