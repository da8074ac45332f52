#!/usr/bin/env bash
# Benchmark: once-relay end to end. Results: tests/bench/results/relay.txt
#  1. Keeping up: 16 producers (synchronous_commit=on, pg_once preloaded so commits pay no
#     NOTIFY) send while one relay delivers to a sink; relay msgs/s vs the same producers'
#     bare-INSERT tps. Target >= 0.8 (the relay keeps up).
#  2. Drain of a 200k backlog to JetStream / HTTP / the PostgreSQL inbox vs the sink's own
#     maximum (a hand-written libnats async publisher / a bare libcurl-multi loop against the
#     same receiver / a plain single-row INSERT loop), and what bounds it: the database's side
#     alone (claim_locked + ack with no sink) and the relay with a free sink (stdout).
#  Parts 1 and 2 run the default --claim-mode (auto: locked for JetStream, PostgreSQL and
#  stdout, leased for HTTP) and, for comparison in the same run, the other mode for HTTP
#  (keep-up), PostgreSQL (keep-up) and JetStream (drain).
#  3. Commit -> received latency at 1k and 10k msgs/s (stdout sink) vs commit -> LISTEN of a
#     transaction doing the same write (an INSERT and pg_notify), producers at
#     synchronous_commit=off so the disk's flush time does not hide the relay's path.
# Usage: tests/bench/relay.sh   (BENCH_SECONDS per measurement, default 10; BACKLOG=200000;
#        BENCH_ONLY=drain or =latency: see below)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
out=$(bench_results relay)   # results/relay.txt, or relay-pg18.txt with ONCE_BENCH_PG=18
BUILD_DIR=$ONCE_BUILD_DIR
RELAY="$BUILD_DIR/daemon/once-relay"
BACKLOG=${BACKLOG:-200000}
work=$(mktemp -d); chmod 777 "$work"
pids=()
cleanup() { local p; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; once_cluster_stop; rm -rf "$work"; }
trap cleanup EXIT
AS=(); [ "$(id -u)" = 0 ] && AS=(setpriv --reuid=postgres --regid=postgres --init-groups --)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

c++ -O2 -o "$work/http_count_receiver" "$here_bench/tools/http_count_receiver.cpp" -lmicrohttpd
c++ -O2 -o "$work/curl_multi_baseline" "$here_bench/tools/curl_multi_baseline.cpp" -lcurl
c++ -O2 -o "$work/nats_pub_baseline" "$here_bench/tools/nats_pub_baseline.cpp" -lnats
c++ -O2 -o "$work/listen_latency" "$here_bench/tools/listen_latency.cpp" -lpq $(pkg-config --cflags libpq)

once_cluster_start shared_preload_libraries=pg_once synchronous_commit=on fsync=on max_wal_size=4GB
chmod 755 "$ONCE_CLUSTER_DIR"
for db in bench inbox; do
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $db" >/dev/null
    psql -qX -v ON_ERROR_STOP=1 -d $db -c "CREATE EXTENSION pg_once" >/dev/null
done
psql -qX -v ON_ERROR_STOP=1 -d bench -c "CREATE TABLE plain_msgs (id uuid DEFAULT gen_random_uuid() PRIMARY KEY, topic text, key text, payload jsonb, created_at timestamptz DEFAULT now())"
psql -qX -v ON_ERROR_STOP=1 -d inbox >/dev/null <<'SQL'
CREATE TABLE received (id text PRIMARY KEY, payload jsonb);
CREATE FUNCTION record(msg once.inbound) RETURNS void LANGUAGE sql AS $$ INSERT INTO received VALUES (msg.message_id, msg.payload) $$;
SELECT once.subscribe('>', 'record(once.inbound)'::regprocedure);
CREATE TABLE plain_received (id text PRIMARY KEY, payload jsonb);
SQL
SRC="host=$PGHOST port=$PGPORT user=postgres dbname=bench"
INBOX="postgresql://postgres@/inbox?host=$PGHOST&port=$PGPORT"

NATS_PORT=$(free_port); NATS_MON=$(free_port)
nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -m "$NATS_MON" -sd "$work/nats" >"$work/nats.log" 2>&1 &
pids+=($!)
"$work/http_count_receiver" "$work/http.port" & pids+=($!)
for _ in $(seq 100); do [ -s "$work/http.port" ] && curl -sf "http://127.0.0.1:$NATS_MON/healthz" >/dev/null && break; sleep 0.1; done
HTTP_URL="http://127.0.0.1:$(cat "$work/http.port")/hook"

# BENCH_ONLY=latency re-measures part 3 only, BENCH_ONLY=drain part 2 only, BENCH_ONLY=keepup
# part 1 only, and each replaces its lines in the results file.
BENCH_ONLY=${BENCH_ONLY:-all}
if [ "$BENCH_ONLY" = all ]; then
    {
        echo "# once-relay benchmark, $(date +%F), ${BENCH_SECONDS}s per run, $(nproc) cores, synchronous_commit=on (latency producers: off), pg_once preloaded, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "# name | clients | measured | baseline | ratio (measured/baseline) | target"
    } >"$out"
elif [ "$BENCH_ONLY" = drain ]; then
    grep -v -e '^drain ' "$out" >"$work/keep.txt" || true
    cp "$work/keep.txt" "$out"
elif [ "$BENCH_ONLY" = keepup ]; then
    grep -v -e '^relay msgs/s' -e '^bare INSERT' "$out" >"$work/keep.txt" || true
    cp "$work/keep.txt" "$out"
else
    grep -v -e 'commit->sink' -e '(p50 ' "$out" >"$work/keep.txt" || true
    cp "$work/keep.txt" "$out"
fi

cat >"$work/send.sql" <<'SQL'
\set k random(1, 1000)
SELECT once.send('bench.order', '{"item": "latte", "qty": 1}', 'k' || :k);
SQL
cat >"$work/insert.sql" <<'SQL'
\set k random(1, 1000)
INSERT INTO plain_msgs (topic, key, payload) VALUES ('bench.order', 'k' || :k, '{"item": "latte", "qty": 1}');
SQL

relay_start() {   # NAME SINK [args]
    local name=$1 sink=$2; shift 2
    local mp; mp=$(free_port)
    "${AS[@]}" "$RELAY" --db "$SRC" --sink "$sink" --name "$name" --metrics "127.0.0.1:$mp" --maintenance off "$@" \
        >"$work/$name.out" 2>"$work/$name.log" &
    RELAY_PID=$!; pids+=($RELAY_PID); RELAY_METRICS="http://127.0.0.1:$mp/metrics"
    for _ in $(seq 100); do curl -sf "$RELAY_METRICS" >/dev/null 2>&1 && return 0; sleep 0.1; done
    echo "relay $name did not start:"; cat "$work/$name.log"; exit 1
}
acked() { curl -sf "$RELAY_METRICS" | awk '$1 == "once_relay_acked_total" {print $2}'; }
relay_stop() { kill -TERM "$RELAY_PID"; wait "$RELAY_PID" 2>/dev/null || true; }
outbox_count() { psql -qXAt -d bench -c "SELECT count(*) FROM once.outbox"; }
wait_drained() { local d=$((SECONDS + ${1:-300})); until [ "$(outbox_count)" = 0 ] || [ $SECONDS -ge $d ]; do sleep 0.2; done; }
# Waits for the relay's own count instead: count(*) scans the whole outbox, dead rows included,
# and polling it would take CPU from the drain being measured.
wait_acked() { local d=$((SECONDS + $2)); until [ "$(acked)" -ge "$1" ] 2>/dev/null || [ $SECONDS -ge $d ]; do sleep 0.05; done; }

# ---------------------------------------------------------------- 1. keeping up
if [ "$BENCH_ONLY" = all ] || [ "$BENCH_ONLY" = keepup ]; then
insert_tps=$(bench_tps 16 "$work/insert.sql")
echo "bare INSERT, 16 clients: $insert_tps tps"
for sink in stdout nats http http-locked postgresql postgresql-leased; do
    mode=auto
    case $sink in
        stdout) uri="stdout:" ;;
        nats) uri="nats://127.0.0.1:$NATS_PORT?stream=BENCH&subject_prefix=once.&create_stream=1" ;;
        http) uri="$HTTP_URL" ;;
        http-locked) uri="$HTTP_URL"; mode=locked ;;
        postgresql) uri="$INBOX&source=bench" ;;
        postgresql-leased) uri="$INBOX&source=bench"; mode=leased ;;
    esac
    psql -qXAt -d bench -c "TRUNCATE once.outbox" >/dev/null
    relay_start "keepup-$sink" "$uri" --batch 500 --max-in-flight 512 --poll-interval 100ms --claim-mode "$mode"
    a0=$(acked); t0=$(date +%s.%N)
    send_tps=$(bench_tps 16 "$work/send.sql")
    a1=$(acked); t1=$(date +%s.%N)
    relay_rate=$(awk -v a="$a0" -v b="$a1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%d", (b - a) / (e - s) }')
    wait_drained 180
    relay_stop
    bench_result "$out" "relay msgs/s to $sink while 16 producers send, vs bare INSERT tps" 16 "$relay_rate" "$insert_tps" ">= 0.8"
    bench_result "$out" "relay msgs/s to $sink vs the same producers' once.send tps" 16 "$relay_rate" "$send_tps" "report (1.0 = keeps up)"
done

fi
if [ "$BENCH_ONLY" = all ] || [ "$BENCH_ONLY" = drain ]; then
# ---------------------------------------------------------------- 2. drain a backlog
fill_backlog() {
    psql -qXAt -d bench -c "TRUNCATE once.outbox" >/dev/null
    local i
    for ((i = 0; i < BACKLOG; i += 50000)); do
        psql -qXAt -d bench -c "SELECT count(once.send('bench.drain', jsonb_build_object('n', g, 'item', 'latte'), 'k' || (g % 10000))) FROM generate_series($i + 1, $i + 50000) g" >/dev/null
    done
}
drain_rate() {   # NAME SINK [MODE] -> msgs/s
    fill_backlog
    local t0 t1
    t0=$(date +%s.%N)
    relay_start "$1" "$2" --batch 1000 --max-in-flight 1024 --poll-interval 100ms --claim-mode "${3:-auto}"
    wait_acked "$BACKLOG" 600
    t1=$(date +%s.%N)
    wait_drained 60
    [ "$(outbox_count)" = 0 ] || { echo "drain $1 did not finish: $(outbox_count) left" >&2; exit 1; }
    relay_stop
    awk -v n="$BACKLOG" -v s="$t0" -v e="$t1" 'BEGIN { printf "%d", n / (e - s) }'
}
nats_relay=$(drain_rate drain-nats "nats://127.0.0.1:$NATS_PORT?stream=BENCH&subject_prefix=once.&create_stream=1")
# (after the relay's drain: it creates the stream, which the baseline publishes to)
nats_base=$("$work/nats_pub_baseline" "nats://127.0.0.1:$NATS_PORT" BENCH once.baseline "$BACKLOG" 1024)
bench_result "$out" "drain ${BACKLOG} to JetStream vs hand-written libnats publisher" 1 "$nats_relay" "$nats_base" ">= 0.8"
nats_leased=$(drain_rate drain-nats-leased "nats://127.0.0.1:$NATS_PORT?stream=BENCH&subject_prefix=once." leased)
bench_result "$out" "drain ${BACKLOG} to JetStream, --claim-mode leased, vs libnats publisher" 1 "$nats_leased" "$nats_base" "report (the leased mode)"
bench_result "$out" "drain ${BACKLOG} to JetStream: locked vs leased claim mode" 1 "$nats_relay" "$nats_leased" "report"
# What bounds the drain: the database's side of it alone (the relay's claims and acks with no
# sink: one statement per batch of 1000, two sessions like the relay's two open batches), and
# the relay with a free sink (stdout), in the same run.
cat >"$work/db_drain.sql" <<'SQL'
SELECT once.ack('db-drain-:client_id', ARRAY(SELECT id FROM once.claim_locked('db-drain-:client_id', 1000)));
SQL
db_drain_rate() {   # -> msgs/s
    fill_backlog
    local t0 t1 left
    t0=$(date +%s.%N)
    pgbench -n -c 2 -j 2 -t $((BACKLOG / 2000 + 20)) -f "$work/db_drain.sql" bench >"$work/db_drain.log" 2>&1 ||
        { cat "$work/db_drain.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    left=$(outbox_count)
    awk -v n="$((BACKLOG - left))" -v s="$t0" -v e="$t1" 'BEGIN { printf "%d", n / (e - s) }'
}
db_alone=$(db_drain_rate)
bench_result "$out" "drain ${BACKLOG}: database side alone (claim_locked+ack, no sink) vs libnats publisher" 2 "$db_alone" "$nats_base" "report (the bound of the >= 0.8 target)"
stdout_relay=$(drain_rate drain-stdout "stdout:")
bench_result "$out" "drain ${BACKLOG} to stdout (relay, free sink) vs database side alone" 1 "$stdout_relay" "$db_alone" "report"
bench_result "$out" "drain ${BACKLOG} to JetStream vs database side alone" 1 "$nats_relay" "$db_alone" "report"
http_base=$("$work/curl_multi_baseline" "$HTTP_URL" "$BACKLOG" 64)
http_relay=$(drain_rate drain-http "$HTTP_URL")
bench_result "$out" "drain ${BACKLOG} to HTTP vs bare libcurl-multi loop (64 connections)" 1 "$http_relay" "$http_base" "report"
cat >"$work/plain_insert.sql" <<'SQL'
INSERT INTO plain_received VALUES (gen_random_uuid()::text, '{"n": 1, "item": "latte"}');
SQL
pg_base=$(bench_tps 1 "$work/plain_insert.sql" inbox)
pg_relay=$(drain_rate drain-pg "$INBOX&source=bench")
bench_result "$out" "drain ${BACKLOG} to the inbox (once.deliver) vs INSERT loop" 1 "$pg_relay" "$pg_base" "report"
fi

# ---------------------------------------------------------------- 3. latency at 1k and 10k msgs/s
# Both sides take the timestamp inside the producing transaction, so both include its commit.
# The producers of this part commit with synchronous_commit=off: with it on, the WAL flush of
# the producer's own commit (1-40 ms on a shared disk) is most of both figures and hides the
# relay's path. The baseline writes a row too, like once.send does.
cat >"$work/lat_send.sql" <<'SQL'
SELECT once.send('bench.lat', jsonb_build_object('t', extract(epoch FROM clock_timestamp())));
SQL
cat >"$work/lat_notify.sql" <<'SQL'
BEGIN;
INSERT INTO plain_msgs (topic, payload) VALUES ('bench.lat', '{}');
SELECT pg_notify('bench_lat', extract(epoch FROM clock_timestamp())::text);
COMMIT;
SQL
listen_baseline() {   # RATE -> "count p50 p99 p999"
    "$work/listen_latency" "$SRC" bench_lat $((BENCH_SECONDS + 2)) >"$work/listen.txt" &
    local lp=$!
    sleep 0.5
    PGOPTIONS="-c synchronous_commit=off" \
        pgbench -n -M prepared -R "$1" -T "$BENCH_SECONDS" -c 4 -j 4 -f "$work/lat_notify.sql" bench >/dev/null 2>&1
    wait $lp
    tail -1 "$work/listen.txt"
}
[ "$BENCH_ONLY" = drain ] || [ "$BENCH_ONLY" = keepup ] && { echo "results in $out"; exit 0; }
for rate in 1000 10000; do
    read -r _ notify_p50 notify_p99 notify_p999 < <(listen_baseline "$rate")
    psql -qXAt -d bench -c "TRUNCATE once.outbox, plain_msgs" >/dev/null
    # interval:claim mode; the stdout sink's default mode is locked, leased is for comparison
    for run in 5:auto 1:auto 0:auto 1:leased; do
        interval=${run%%:*} mode=${run#*:}
        [ "$rate" = 10000 ] && [ "$interval" = 0 ] && continue
        # once.notify_interval: the notifier's coalescing window after a wake-up (5ms default).
        psql -qXAt -d postgres -c "ALTER SYSTEM SET once.notify_interval = $interval" -c "SELECT pg_reload_conf()" >/dev/null
        rm -f "$work/lat.fifo"; mkfifo "$work/lat.fifo"; chmod 666 "$work/lat.fifo"
        python3 "$here_bench/tools/stdout_latency.py" <"$work/lat.fifo" >"$work/lat.txt" &
        lat_reader=$!
        "${AS[@]}" "$RELAY" --db "$SRC" --sink stdout: --name "lat-$rate" --maintenance off --claim-mode "$mode" \
            >"$work/lat.fifo" 2>"$work/lat.log" &
        rp=$!; pids+=($rp)
        sleep 1
        sent=$(PGOPTIONS="-c synchronous_commit=off" pgbench -n -M prepared -R "$rate" -T "$BENCH_SECONDS" -c 4 -j 4 -f "$work/lat_send.sql" bench 2>&1 |
            awk '/^tps = / { print int($3) }')
        wait_drained 60
        kill -TERM "$rp"; wait "$rp" 2>/dev/null || true; wait "$lat_reader" || true
        read -r n p50 p99 p999 <"$work/lat.txt"
        label=""; [ "$mode" = leased ] && label=", --claim-mode leased"
        bench_result "$out" "commit->sink p99 ms at ${rate}/s (notify_interval ${interval}ms$label) vs commit->LISTEN p99" 4 "$p99" "$notify_p99" "<= 3.0 (lower is better)"
        echo "   (p50 $p50 / p99.9 $p999 ms vs LISTEN p50 $notify_p50 / p99.9 $notify_p999 ms; $n messages, $sent sends/s achieved)" | tee -a "$out"
    done
done
psql -qXAt -d postgres -c "ALTER SYSTEM RESET once.notify_interval" -c "SELECT pg_reload_conf()" >/dev/null
echo "results in $out"
