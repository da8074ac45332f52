#!/usr/bin/env bash
# A trace of the commit -> sink latency of the relay over time: where a p99 comes from. Producers
# (pgbench, 4 clients) send at RATE msgs/s for TAIL_SECONDS; the relay (stdout sink) writes each
# message to a reader that records when it arrived and how long after its send it came. Prints
# p50 / p99 / p99.9 / max, the arrival gaps over 20 ms, and the latency per 100 ms of arrivals
# for every bucket whose worst message took over TAIL_SHOW ms (default 5): a tail that comes
# from one moment (the stream's start, a stall) shows as a few buckets; a tail spread over
# the run shows as many.
#   TAIL_TRANSPORT=wal|table (default wal)   RATE (default 10000)   TAIL_SECONDS (default 10)
#   TAIL_START=open (default: the producers start once the relay streams the slot, as
#   relay_limit.sh measures) | now (they start with the relay: the messages committed while it
#   opens the stream wait for it, as after a restart)
#   TAIL_BEHIND_ROWS (default 0): before the relay starts, another database of the cluster writes
#   that many rows of 400 bytes, which the walsender decodes (and skips) before it reaches the
#   first message: a relay that starts behind, as relay_limit.sh's latency part once did after
#   its drain part
#   TAIL_BEHIND_TX (default 0): the same, as that many one-row transactions in the relay's own
#   database (each one decoded on its own: what a table-transport run leaves behind)
#   TAIL_SERVER_OPTS: more server settings, e.g. once.notify_interval=0
# Not run by ctest; writes tests/bench/results/wal_tail.txt (appends).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
out=$(bench_results wal_tail)
RELAY="$ONCE_BUILD_DIR/daemon/once-relay"
TR=${TAIL_TRANSPORT:-wal}
RATE=${RATE:-10000}
SECS=${TAIL_SECONDS:-10}
START=${TAIL_START:-open}
SHOW=${TAIL_SHOW:-5}
work=$(mktemp -d); chmod 777 "$work"
cleanup() {
    local p
    for p in $(cat "$work/relay.pids" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true; once_cluster_stop; rm -rf "$work"
}
trap cleanup EXIT
AS=(); [ "$(id -u)" = 0 ] && AS=(setpriv --reuid=postgres --regid=postgres --init-groups --)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
die() { echo "wal_tail: $*" >&2; exit 1; }
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
# As relay_limit.sh's latency part: fsync off, producers commit synchronously.
once_cluster_start shared_preload_libraries=pg_once wal_level=logical synchronous_commit=on fsync=off ${TAIL_SERVER_OPTS:-}
chmod 755 "$ONCE_CLUSTER_DIR"
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE bench" >/dev/null
sql() { psql -qXAt -v ON_ERROR_STOP=1 -d bench "$@"; }
sql -c "CREATE EXTENSION pg_once" >/dev/null
SRC="host=$PGHOST port=$PGPORT user=postgres dbname=bench"
args=(--transport "$TR")
if [ "$TR" = wal ]; then
    "${AS[@]}" "$RELAY" --db "$SRC" --create-wal-slot >/dev/null
fi
if [ "${TAIL_BEHIND_ROWS:-0}" -gt 0 ]; then
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE busy" >/dev/null
    psql -qX -v ON_ERROR_STOP=1 -d busy -c "CREATE TABLE filler (n int, pad text)" \
        -c "INSERT INTO filler SELECT g, repeat('x', 400) FROM generate_series(1, $TAIL_BEHIND_ROWS) g"
fi
if [ "${TAIL_BEHIND_TX:-0}" -gt 0 ]; then
    sql -c "CREATE TABLE filler (n int, pad text)"
    echo "INSERT INTO filler VALUES (1, 'x');" >"$work/filler.sql"
    pgbench -n -c 4 -j 4 -t $((TAIL_BEHIND_TX / 4)) -f "$work/filler.sql" bench >/dev/null 2>&1
fi
cat >"$work/send.sql" <<'SQL'
SELECT once.send('bench.lat', jsonb_build_object('t', extract(epoch FROM clock_timestamp())));
SQL
mkfifo "$work/fifo"; chmod 666 "$work/fifo"
python3 "$here_bench/tools/stdout_latency.py" "$work/arrivals.txt" <"$work/fifo" >/dev/null &
reader=$!
mp=$(free_port)
"${AS[@]}" "$RELAY" --db "$SRC" --sink stdout: --name tail --metrics "127.0.0.1:$mp" --maintenance off \
    --log-level warn "${args[@]}" >"$work/fifo" 2>"$work/relay.log" &
RELAY_PID=$!; echo "$RELAY_PID" >>"$work/relay.pids"
stream_active() { curl -sf "http://127.0.0.1:$mp/metrics" | grep -qx 'once_wal_stream_active 1'; }
if [ "$START" = open ]; then
    once_wait_for "relay metrics" 30 curl -sf "http://127.0.0.1:$mp/metrics"
    if [ "$TR" = wal ]; then once_wait_for "WAL stream open" 30 stream_active; fi
fi
PGOPTIONS="-c once.transport=$TR" pgbench -n -M prepared -R "$RATE" -T "$SECS" -c 4 -j 4 -f "$work/send.sql" bench \
    >"$work/pgbench.log" 2>&1 || die "pgbench: $(tail -3 "$work/pgbench.log")"
sent=$(awk '/ processed: / { print $NF }' "$work/pgbench.log" | cut -d/ -f1)
acked() { curl -sf "http://127.0.0.1:$mp/metrics" | awk '$1 == "once_relay_acked_total" { print $2 }'; }
all_acked() { [ "$(acked)" -ge "$sent" ] 2>/dev/null; }
once_wait_for "all $sent acknowledged" 60 all_acked || die "relay: $(tail -3 "$work/relay.log")"
kill -TERM "$RELAY_PID"; wait "$RELAY_PID" || true; wait "$reader" || true
{
    echo "# wal_tail: $(date -u '+%Y-%m-%d %H:%M UTC'), PostgreSQL $(sql -c 'SHOW server_version_num'), $(nproc) cores," \
         "load average at start $load_start; transport $TR, $RATE msgs/s asked, ${SECS}s, producers start: $START," \
         "behind: ${TAIL_BEHIND_ROWS:-0} rows, ${TAIL_BEHIND_TX:-0} transactions, server options: ${TAIL_SERVER_OPTS:-none}"
    python3 - "$work/arrivals.txt" "$SHOW" <<'PY'
import sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
show = float(sys.argv[2])
lat = sorted(r[1] for r in rows)
n = len(lat)
print("%d messages: p50 %.2f  p99 %.2f  p99.9 %.2f  max %.2f ms" % (n, lat[n // 2], lat[n * 99 // 100], lat[n * 999 // 1000], lat[-1]))
prev = None
for a, l in rows:
    if prev is not None and a - prev > 0.02:
        print("  arrival gap %.1f ms at +%.3f s" % ((a - prev) * 1000, a - rows[0][0]))
    prev = a
buckets = {}
for a, l in rows:
    b = int((a - rows[0][0]) * 10)
    buckets.setdefault(b, []).append(l)
over = [b for b in sorted(buckets) if max(buckets[b]) > show]
print("  100 ms buckets of arrivals: %d, of which %d hold a message over %.0f ms:" % (len(buckets), len(over), show))
p99 = lat[n * 99 // 100]
share = sum(1 for b in over for l in buckets[b] if l >= p99)
for b in over:
    ls = buckets[b]
    print("    +%4.1f s: %5d messages, mean %7.2f ms, max %7.2f ms" % (b / 10, len(ls), sum(ls) / len(ls), max(ls)))
tail = sum(1 for l in lat if l >= p99)
print("  of the %d messages at or above p99, %d arrived in those buckets" % (tail, share))
PY
    echo "# load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$out"
