#!/usr/bin/env bash
# Sagas per second for the 4-step CampusCafe flow (order -> stock -> payment -> notification)
# through the relays, and where the time goes. Parts are measured separately with pgbench at
# saturation in the same run (cost per saga = 1 / throughput), then the whole flow end to end:
#   baseline   hand-written SQL doing the same writes (an order row + 3 updates + 4 queue rows)
#   outbox     4 x once.send per saga (the saga's commands)
#   saga       saga_start + 3 x saga_reply driven directly (includes its 4 once.send)
#   inbox      6 x once.deliver per saga (3 commands + 3 replies) into a no-op handler
#   end to end orders placed in cafe_orders, completed through 6 relays and 3 service databases
# Results: tests/bench/results/saga.txt. Not run by ctest.
#   SAGA_BENCH_SECONDS (default 10)  SAGA_BENCH_ORDERS (default 1000)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export ONCE_STAGE_DIR=${ONCE_STAGE_DIR:-$root/build/stage} ONCE_BUILD_DIR=${ONCE_BUILD_DIR:-$root/build}
source "$root/tests/lib/cluster.sh"
source "$root/examples/campus_cafe/cafe.sh"
secs=${SAGA_BENCH_SECONDS:-10}
orders=${SAGA_BENCH_ORDERS:-1000}
out=$here/results/saga.txt
work=$(mktemp -d)

cleanup() { cafe_stop_ticker; cafe_stop_relays; once_cluster_stop; rm -rf "$work"; }
trap cleanup EXIT
once_cluster_start synchronous_commit=on fsync=on shared_preload_libraries=pg_once
CAFE_RELAY_LOG_DIR=$ONCE_CLUSTER_DIR
cafe_setup

# A database for the isolated parts, with the same saga definition.
psql -qX -d postgres -c "CREATE DATABASE bench" >/dev/null
cafe_psql bench -c "CREATE EXTENSION pg_once" >/dev/null
cafe_psql bench -c "CREATE SCHEMA cafe" >/dev/null
sed -n '/SELECT once.saga_define/,/}\$\$);/p' "$root/examples/campus_cafe/orders.sql" | cafe_psql bench >/dev/null
cafe_psql bench -c "
    CREATE SEQUENCE bench_seq;
    CREATE TABLE base_orders (id text PRIMARY KEY, data jsonb, status text, step text);
    CREATE TABLE base_queue (id bigserial PRIMARY KEY, topic text, payload jsonb);
    CREATE FUNCTION noop(msg once.inbound) RETURNS void LANGUAGE sql AS 'SELECT';
    SELECT once.subscribe('bench.>', 'noop(once.inbound)');" >/dev/null

cat >"$work/baseline.sql" <<'SQL'
SELECT nextval('bench_seq') AS n \gset
INSERT INTO base_orders VALUES ('s' || :n, '{"item": "latte", "qty": 1}', 'running', 'reserve_stock'); INSERT INTO base_queue (topic, payload) VALUES ('stock.reserve', jsonb_build_object('saga_id', 's' || :n));
UPDATE base_orders SET step = 'capture_payment', data = data || '{"r": 1}' WHERE id = 's' || :n; INSERT INTO base_queue (topic, payload) VALUES ('payment.capture', jsonb_build_object('saga_id', 's' || :n));
UPDATE base_orders SET step = 'notify', data = data || '{"p": 1}' WHERE id = 's' || :n; INSERT INTO base_queue (topic, payload) VALUES ('notify.send', jsonb_build_object('saga_id', 's' || :n));
UPDATE base_orders SET status = 'completed' WHERE id = 's' || :n; INSERT INTO base_queue (topic, payload) VALUES ('order.completed', jsonb_build_object('saga_id', 's' || :n));
SQL
cat >"$work/outbox.sql" <<'SQL'
SELECT nextval('bench_seq') AS n \gset
SELECT once.send('stock.reserve', jsonb_build_object('saga_id', 's' || :n, 'step', 'reserve_stock'), 's' || :n, '{"idempotency_key": "x"}');
SELECT once.send('payment.capture', jsonb_build_object('saga_id', 's' || :n, 'step', 'capture_payment'), 's' || :n, '{"idempotency_key": "x"}');
SELECT once.send('notify.send', jsonb_build_object('saga_id', 's' || :n, 'step', 'notify'), 's' || :n, '{"idempotency_key": "x"}');
SELECT once.send('order.done', jsonb_build_object('saga_id', 's' || :n), 's' || :n, '{"idempotency_key": "x"}');
SQL
cat >"$work/saga.sql" <<'SQL'
SELECT nextval('bench_seq') AS n \gset
SELECT once.saga_start('campus_cafe_order', 's' || :n, '{"item": "latte", "qty": 1, "amount": 450, "card": "ok"}');
SELECT once.saga_reply('s' || :n, 'reserve_stock', 'succeeded', '{"reservation": "r"}', 's' || :n || ':1');
SELECT once.saga_reply('s' || :n, 'capture_payment', 'succeeded', '{"payment_id": "p"}', 's' || :n || ':2');
SELECT once.saga_reply('s' || :n, 'notify', 'succeeded', NULL, 's' || :n || ':3');
SQL
cat >"$work/inbox.sql" <<'SQL'
SELECT nextval('bench_seq') AS n \gset
SELECT once.deliver('bench', 's' || :n || ':1', 'bench.a', '{"saga_id": "x"}', '{}');
SELECT once.deliver('bench', 's' || :n || ':2', 'bench.a', '{"saga_id": "x"}', '{}');
SELECT once.deliver('bench', 's' || :n || ':3', 'bench.a', '{"saga_id": "x"}', '{}');
SELECT once.deliver('bench', 's' || :n || ':4', 'bench.a', '{"saga_id": "x"}', '{}');
SELECT once.deliver('bench', 's' || :n || ':5', 'bench.a', '{"saga_id": "x"}', '{}');
SELECT once.deliver('bench', 's' || :n || ':6', 'bench.a', '{"saga_id": "x"}', '{}');
SQL

tps() {  # script -> sagas/s (one pgbench "transaction" = one script run = one saga)
    local r
    r=$(pgbench -n -d bench -c 4 -j 2 -T "$secs" -f "$1" 2>&1) || { echo "pgbench failed: $r" >&2; return 1; }
    sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$r" | head -1
}
echo "measuring baseline, outbox, saga, inbox (${secs}s each)..."
base=$(tps "$work/baseline.sql")
obx=$(tps "$work/outbox.sql")
sag=$(tps "$work/saga.sql")
inb=$(tps "$work/inbox.sql")
# The same baseline and saga with synchronous_commit = off: with durable commits both are
# bound by the WAL flush of their commits, which hides what the saga logic itself costs.
echo "measuring baseline and saga without waiting for the WAL flush (${secs}s each)..."
cpu_base=$(PGOPTIONS="-c synchronous_commit=off" tps "$work/baseline.sql")
cpu_sag=$(PGOPTIONS="-c synchronous_commit=off" tps "$work/saga.sql")

echo "measuring end to end: $orders orders through 6 relays..."
cafe_start_relays
CAFE_SCENARIOS=(happy)
t0=$(date +%s.%N)
cafe_place_orders "$orders" e2e
cafe_wait_settled 600 >/dev/null
t1=$(date +%s.%N)
completed=$(cafe_psql cafe_orders -c "SELECT count(*) FROM once.sagas WHERE status = 'completed'")
e2e=$(awk -v n="$completed" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", n / (b - a) }')
lat=$(cafe_psql cafe_orders -c "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at))::numeric * 1000)
                                  || ' ms median, ' || round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at))::numeric * 1000)
                                  || ' ms p99' FROM once.sagas")

report=$(awk -v cpu_base="$cpu_base" -v cpu_sag="$cpu_sag" -v base="$base" -v obx="$obx" -v sag="$sag" -v inb="$inb" -v e2e="$e2e" -v n="$completed" -v lat="$lat" -v secs="$secs" '
function ms(t) { return 1000.0 / t }
BEGIN {
  saga_ms = ms(sag); outbox_ms = ms(obx); logic_ms = saga_ms - outbox_ms; inbox_ms = ms(inb); e2e_ms = ms(e2e);
  if (logic_ms < 0) logic_ms = 0;
  rest_ms = e2e_ms - saga_ms - inbox_ms; if (rest_ms < 0) rest_ms = 0;
  printf "CampusCafe saga benchmark (4-step flow: order, stock, payment, notification)\n";
  printf "machine: 2 cores shared with other sessions; synchronous_commit=on, fsync=on; pgbench -c 4 -j 2, %ss per part\n\n", secs;
  printf "%-44s %10s %14s\n", "part", "sagas/s", "ms per saga";
  printf "%-44s %10.0f %14.2f\n", "baseline: hand-written SQL, same writes", base, ms(base);
  printf "%-44s %10.0f %14.2f\n", "outbox: 4 x once.send", obx, outbox_ms;
  printf "%-44s %10.0f %14.2f\n", "saga: saga_start + 3 x saga_reply (+ sends)", sag, saga_ms;
  printf "%-44s %10.0f %14.2f\n", "inbox: 6 x once.deliver (no-op handler)", inb, inbox_ms;
  printf "%-44s %10.1f %14.2f\n", "end to end through 6 relays (" n " orders)", e2e, e2e_ms;
  printf "%-44s %10.0f %14.2f\n", "baseline, synchronous_commit=off", cpu_base, ms(cpu_base);
  printf "%-44s %10.0f %14.2f\n", "saga, synchronous_commit=off", cpu_sag, ms(cpu_sag);
  printf "\nsaga logic vs baseline: %.2fx the cost of the hand-written SQL (durable commits)\n", saga_ms / ms(base);
  printf "saga logic vs baseline: %.2fx without waiting for the WAL flush (the CPU cost)\n", ms(cpu_sag) / ms(cpu_base);
  printf "end-to-end latency per order: %s\n\n", lat;
  printf "share of one end-to-end saga (machine time at saturation):\n";
  printf "  outbox (4 sends)                     %5.1f%%\n", 100 * outbox_ms / e2e_ms;
  printf "  saga logic (state machine + storage) %5.1f%%\n", 100 * logic_ms / e2e_ms;
  printf "  inbox (6 deliveries)                 %5.1f%%\n", 100 * inbox_ms / e2e_ms;
  printf "  relay + services + waiting           %5.1f%%\n", 100 * rest_ms / e2e_ms;
  big = "relay + services + waiting"; m = rest_ms;
  if (logic_ms > m) { big = "saga logic"; m = logic_ms }
  if (inbox_ms > m) { big = "inbox"; m = inbox_ms }
  if (outbox_ms > m) { big = "outbox"; m = outbox_ms }
  printf "\nbottleneck: %s\n", big;
}')
echo "$report" | tee "$out"
