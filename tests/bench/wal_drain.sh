#!/usr/bin/env bash
# Measurement: once-relay --sink stdout: (to /dev/null) draining a backlog committed before it
# starts, --transport wal (the messages in the WAL, read from the slot) against the table
# (--transport table, the default claim mode), same server, same run, each ROUNDS times.
# Time: from the relay's start to once_relay_acked_total reaching the backlog (polled every
# 20 ms on /metrics), so it includes connecting. Usage: tests/bench/wal_drain.sh
# (BACKLOG=100000 ROUNDS=2; ONCE_STAGE_DIR, ONCE_BUILD_DIR, ONCE_SOURCE_DIR as for the tests).
# Results are appended to tests/bench/results/wal_drain.txt.
# Then what a restart costs when another database of the cluster wrote meanwhile (NEIGHBOUR_ROWS
# rows of 400 bytes, default 200000, ~100 MB of WAL), the WAL transport's drain of the same
# backlog after: (idle) the neighbour wrote while the relay ran idle, then the relay stopped;
# (down) the relay was stopped while the neighbour wrote. Each prints how far behind the
# server the slot's restart position was when the relay started again. A CHECKPOINT after the
# neighbour's writes stands for the running-transactions record a busy server logs every 15 s,
# which is what lets a slot's restart position move.
set -euo pipefail
source "$(dirname "$0")/../integration/lib/relay_common.sh"
BACKLOG=${BACKLOG:-100000}
ROUNDS=${ROUNDS:-2}
out="$ONCE_SOURCE_DIR/tests/bench/results/wal_drain.txt"
exec > >(tee -a "$out")
echo "# wal_drain: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg), BACKLOG=$BACKLOG ROUNDS=$ROUNDS"
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
NEIGHBOUR_ROWS=${NEIGHBOUR_ROWS:-200000}
psql -X -q -d postgres -c "CREATE DATABASE busy" -c "ALTER DATABASE src SET once.transport = 'wal'"
psql -X -q -d busy -c "CREATE TABLE filler (n int, pad text)"
neighbour_writes() {
    psql -X -q -v ON_ERROR_STOP=1 -d busy -c "INSERT INTO filler SELECT g, repeat('x', 400) FROM generate_series(1, $NEIGHBOUR_ROWS) g" \
        -c CHECKPOINT -c "INSERT INTO filler SELECT 1, 'after the checkpoint'"
}
restart_lag_mb() { psql_src -c "SELECT round((pg_current_wal_lsn() - restart_lsn) / 1048576.0, 1) FROM pg_replication_slots WHERE slot_name = 'once_relay'"; }
slot_past() { [ "$(psql_src -c "SELECT restart_lsn >= '$1'::pg_lsn FROM pg_replication_slots WHERE slot_name = 'once_relay'")" = t ]; }
for ((r = 1; r <= ROUNDS; r++)); do
    for case in idle down; do
        port=$(free_port)
        "${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --sink stdout: --transport wal --metrics "127.0.0.1:$port" \
            --log-level warn >/dev/null 2>>"$T/drain.log" &
        pid=$!
        once_wait_for "the stream" 30 sh -c "curl -fsS http://127.0.0.1:$port/metrics | grep -qx 'once_wal_stream_active 1'"
        if [ $case = idle ]; then
            neighbour_writes
            end=$(psql_src -c "SELECT pg_current_wal_lsn()")
            # (an idle relay confirms the walsender's keepalive position; the CHECKPOINT's
            # running-transactions record then moves the restart position)
            once_wait_for "the idle relay's slot past the neighbour's WAL" 60 slot_past "$end" ||
                echo "idle round $r: the slot did not pass the neighbour's WAL within 60 s"
            kill -TERM "$pid"; wait "$pid" || true
        else
            kill -TERM "$pid"; wait "$pid" || true
            neighbour_writes
        fi
        backlog wal
        lag=$(restart_lag_mb)
        s=$(drain wal)
        printf 'restart (%s) round %d: restart position %s MB behind; %d messages in %.2f s = %.0f msgs/s\n' "$case" "$r" "$lag" \
            "$BACKLOG" "$s" "$(awk -v n="$BACKLOG" -v s="$s" 'BEGIN { print n / s }')"
    done
done
echo "# load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
