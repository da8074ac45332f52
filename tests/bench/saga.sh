#!/usr/bin/env bash
# Sagas per second for the 4-step CampusCafe flow (order -> stock -> payment -> notification)
# through the relays, and where the time goes. Parts are measured separately with pgbench at
# saturation in the same run (cost per saga = 1 / throughput), then the whole flow end to end:
#   baseline   hand-written SQL doing the orchestrator's minimal writes (an order row + 3 updates +
#              4 queue rows): no history, no reply dedupe, no deadline to index
#   same       hand-written PL/pgSQL doing the same writes as saga_start and saga_reply, one call per
#              step (tools/saga_same_writes.sql): what the saga logic is compared with
#              (target <= 1.15x)
#   outbox     4 x once.send per saga (the saga's commands)
#   saga       saga_start + 3 x saga_reply driven directly (includes its 4 once.send)
#   inbox      6 x once.deliver per saga (3 commands + 3 replies) into a no-op handler
#   end to end orders placed in cafe_orders by concurrent sessions, completed through 6 relays
#              and 3 service databases; at saturation and at a steady rate; once per transport:
#              the table (the default) and the WAL (once.transport = 'wal', a slot per relay,
#              --transport wal), one after the other in the same run, so that the WAL/table
#              ratios come from the same machine state
# Each part runs with durable commits and with synchronous_commit = off (its CPU cost).
# The cluster runs with wal_level = logical for both transports when the WAL one is measured.
# Results: tests/bench/results/saga.txt (the runs on both transports of 2026-11-26, saved by hand:
# saga-wal.txt). Not run by ctest.
#   SAGA_BENCH_SECONDS (default 10)  SAGA_BENCH_ORDERS (default 4000)  SAGA_BENCH_CLIENTS (8 order
#   sessions)  SAGA_BENCH_RATES (orders/s of the steady-rate latency runs, default "100 500 800")
#   SAGA_BENCH_TRANSPORTS (end-to-end runs, in this order, default "table wal"; "table" alone
#   measures what this script measured before the WAL transport)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/server.sh"   # ONCE_BENCH_PG: which server; bench_results NAME
source "$root/tests/lib/cluster.sh"
source "$root/examples/campus_cafe/cafe.sh"
secs=${SAGA_BENCH_SECONDS:-10}
orders=${SAGA_BENCH_ORDERS:-4000}
order_clients=${SAGA_BENCH_CLIENTS:-8}
steady_rates=${SAGA_BENCH_RATES:-100 500 800}
transports=${SAGA_BENCH_TRANSPORTS:-table wal}
case " $transports " in *" table "*) ;; *) echo "SAGA_BENCH_TRANSPORTS must include table" >&2; exit 2 ;; esac
export NPROC=$(nproc)
out=$(bench_results saga)
work=$(mktemp -d)

cleanup() { cafe_stop_ticker; cafe_stop_relays; once_cluster_stop; rm -rf "$work"; }
trap cleanup EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
# No timed or size-triggered checkpoint during the runs: each transport's run starts right after
# a CHECKPOINT instead, so that neither pays for one the other caused. (It does not explain
# why, in three runs on the loaded machine, the first end-to-end run with durable commits ran at
# a tenth of the second's rate, whichever transport came first: results/saga-wal.txt.)
cluster_opts=(synchronous_commit=on fsync=on shared_preload_libraries=pg_once checkpoint_timeout=1h max_wal_size=16GB)
case " $transports " in *" wal "*) cluster_opts+=(wal_level=logical) ;; esac
once_cluster_start "${cluster_opts[@]}"
CAFE_RELAY_LOG_DIR=$ONCE_CLUSTER_DIR
cafe_setup

# A database for the isolated parts, with the same saga definition.
psql -qX -d postgres -c "CREATE DATABASE bench" >/dev/null
cafe_psql bench -c "CREATE EXTENSION pg_once" >/dev/null
cafe_psql bench -c "CREATE SCHEMA cafe" >/dev/null
sed -n '/SELECT once.saga_define/,/}\$\$);/p' "$root/examples/campus_cafe/orders.sql" | cafe_psql bench >/dev/null
cafe_psql bench -v ON_ERROR_STOP=1 -f "$here/tools/saga_same_writes.sql" >/dev/null
cafe_psql bench -c "
    CREATE SEQUENCE bench_seq;
    CREATE TABLE base_orders (id text PRIMARY KEY, data jsonb, status text, step text);
    CREATE TABLE base_queue (id bigserial PRIMARY KEY, topic text, payload jsonb);
    CREATE FUNCTION noop(msg once.inbound) RETURNS void LANGUAGE sql AS 'SELECT';
    SELECT once.subscribe('bench.>', 'noop(once.inbound)');" >/dev/null

cat >"$work/outbox.sql" <<'SQL'
SELECT nextval('bench_seq') AS n \gset
SELECT once.send('stock.reserve', jsonb_build_object('saga_id', 's' || :n, 'step', 'reserve_stock'), 's' || :n, '{"idempotency_key": "x"}');
SELECT once.send('payment.capture', jsonb_build_object('saga_id', 's' || :n, 'step', 'capture_payment'), 's' || :n, '{"idempotency_key": "x"}');
SELECT once.send('notify.send', jsonb_build_object('saga_id', 's' || :n, 'step', 'notify'), 's' || :n, '{"idempotency_key": "x"}');
SELECT once.send('order.done', jsonb_build_object('saga_id', 's' || :n), 's' || :n, '{"idempotency_key": "x"}');
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
# Every part twice: with durable commits (what a user gets) and with synchronous_commit = off
# (the CPU cost: with durable commits every part is bound by the WAL flush of its commits,
# which hides what the saga logic itself costs, and the parts commit per statement while the
# relays commit per batch, so only the CPU figures add up to a share of the end-to-end run).
declare -A durable cpu
for part in baseline same outbox saga inbox; do
    echo "measuring $part (${secs}s durable, ${secs}s without the WAL flush)..."
    script="$work/$part.sql"   # (the parts saga_cost.sh shares are in tools/)
    [ -f "$here/tools/saga_$part.pgbench" ] && script="$here/tools/saga_$part.pgbench"
    durable[$part]=$(tps "$script")
    cpu[$part]=$(PGOPTIONS="-c synchronous_commit=off" tps "$script")
done

# The parts' database goes before the end-to-end runs: its autovacuum and its undelivered
# messages are no part of them.
psql -qX -d postgres -c "DROP DATABASE bench" >/dev/null

# End to end: orders come from $order_clients concurrent sessions (a web tier), one
# transaction per order, happy path; the rate runs from the first order to the last settled saga.
cafe_psql cafe_orders -c "CREATE SEQUENCE bench_order_ids" >/dev/null
cat >"$work/place.sql" <<SQL
SELECT cafe.place_order(concat(:prefix::text, nextval('bench_order_ids')), 'latte', 1, 450, 'ok', 'happy');
SQL
per_saga() {  # PREFIX -> "p50 p99" ms of created -> finished of that prefix's sagas
    cafe_psql cafe_orders -F ' ' -c "
        SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY d))::numeric, 1),
               round((percentile_cont(0.99) WITHIN GROUP (ORDER BY d))::numeric, 1)
          FROM (SELECT extract(epoch FROM finished_at - created_at) * 1000 AS d
                  FROM once.sagas WHERE saga_id LIKE '$1%') s"
}
relay_ticks() {  # CPU time (clock ticks) the relays have used so far
    local pid sum=0
    for pid in "${CAFE_RELAY_PIDS[@]}"; do
        [ -n "$pid" ] && sum=$((sum + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
    done
    echo "$sum"
}
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }  # busy, all cores
end_to_end() {  # PREFIX -> "sagas/s p50 p99 relays-share-of-busy-CPU machine-busy-fraction"
    local t0 t1 n r0 r1 m0 m1
    r0=$(relay_ticks); m0=$(machine_ticks)
    t0=$(date +%s.%N)
    pgbench -n -M extended -d cafe_orders -c "$order_clients" -j 2 -t $((orders / order_clients)) \
        -D prefix="$1-" -f "$work/place.sql" >"$work/pgbench.log" 2>&1 || { cat "$work/pgbench.log" >&2; return 1; }
    cafe_wait_settled 600 >/dev/null
    t1=$(date +%s.%N)
    r1=$(relay_ticks); m1=$(machine_ticks)
    n=$(cafe_psql cafe_orders -c "SELECT count(*) FROM once.sagas WHERE saga_id LIKE '$1-%' AND status = 'completed'")
    echo "$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) }') $(per_saga "$1-")" \
         "$(awk -v r=$((r1 - r0)) -v m=$((m1 - m0)) 'BEGIN { printf "%.3f", (m > 0 ? r / m : 0) }')" \
         "$(awk -v m=$((m1 - m0)) -v hz="$(getconf CLK_TCK)" -v c="$NPROC" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", m / (hz * c * (b - a)) }')"
}
at_rate() {  # PREFIX RATE -> "p50 p99" with orders placed at a steady RATE per second
    pgbench -n -M extended -d cafe_orders -c 4 -j 2 -R "$2" -T "$secs" -D prefix="$1-" -f "$work/place.sql" >"$work/pgbench.log" 2>&1 || { cat "$work/pgbench.log" >&2; return 1; }
    cafe_wait_settled 600 >/dev/null
    per_saga "$1-"
}
set_commit() {
    cafe_psql postgres -c "ALTER SYSTEM SET synchronous_commit = $1" -c "SELECT pg_reload_conf()" >/dev/null
}
# The transport of the cafe databases' new sessions (the relays' sink sessions run the service
# handlers and saga_reply, so relays start after the switch).
use_transport() {
    local db
    if [ "$1" = wal ]; then cafe_use_wal; return; fi
    for db in "${CAFE_DBS[@]}"; do psql -qX -v ON_ERROR_STOP=1 -d postgres -c "ALTER DATABASE $db RESET once.transport" >/dev/null; done
}
# Rows inserted into once.outbox of the four cafe databases so far: what did not ride the
# stream (sends kept as rows, and write-backs). Statistics of a session are complete once it
# ended, so this is read with no session of the cafe databases left.
no_cafe_sessions() {
    [ "$(cafe_psql postgres -c "SELECT count(*) FROM pg_stat_activity WHERE datname LIKE 'cafe\_%' AND pid <> pg_backend_pid()")" = 0 ]
}
outbox_inserts() {
    once_wait_for "the cafe databases' sessions to end" 60 no_cafe_sessions
    local db sum=0 n
    for db in "${CAFE_DBS[@]}"; do
        n=$(cafe_psql "$db" -c "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relid = 'once.outbox'::regclass")
        sum=$((sum + n))
    done
    echo "$sum"
}
# PREFIX -> p50 ms of each step's round trip (stock, payment, notification): from its command's
# commit (the saga's start, or the previous reply's transaction) to its reply applied in
# cafe_orders; two hops, the service's transaction and the reply's delivery each.
per_step() {
    cafe_psql cafe_orders -c "
        WITH r AS (SELECT s.saga_id, s.created_at, t.step, min(t.at) AS at
                     FROM once.sagas s JOIN once.saga_transitions t ON t.saga_id = s.saga_id
                    WHERE s.saga_id LIKE '$1%' AND s.status = 'completed' AND t.message_id IS NOT NULL
                    GROUP BY 1, 2, 3),
             d AS (SELECT step, extract(epoch FROM at - coalesce(lag(at) OVER (PARTITION BY saga_id ORDER BY at), created_at)) * 1000 AS ms
                     FROM r)
        SELECT string_agg(round(p::numeric, 1)::text, ' / ' ORDER BY o) FROM (
          SELECT CASE step WHEN 'reserve_stock' THEN 1 WHEN 'capture_payment' THEN 2 ELSE 3 END AS o,
                 percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p FROM d GROUP BY step) x"
}
sagas_of() {  # PREFIX -> sagas whose id starts with it
    cafe_psql cafe_orders -c "SELECT count(*) FROM once.sagas WHERE saga_id LIKE '$1%'"
}
declare -A steady e2e_of rows_of sagas_in steps_of
for t in $transports; do
    p=; [ "$t" = table ] || p="${t}_"   # the table run keeps the prefixes of earlier results
    CAFE_TRANSPORT=$t
    use_transport "$t"
    rows0=$(outbox_inserts)
    cafe_psql postgres -c CHECKPOINT
    cafe_start_relays
    echo "$t transport: measuring end to end: $orders orders from $order_clients sessions through 6 relays..."
    e2e_of[${t}durable]=$(end_to_end "${p}durable")
    for rate in $steady_rates; do
        steady[${t}durable$rate]=$(at_rate "${p}steady${rate}_durable" "$rate")
        steps_of[$t$rate]=$(per_step "${p}steady${rate}_durable-")
    done
    set_commit off
    echo "$t transport: measuring end to end without waiting for the WAL flush..."
    e2e_of[${t}cpu]=$(end_to_end "${p}cpu")
    for rate in $steady_rates; do steady[${t}cpu$rate]=$(at_rate "${p}steady${rate}_cpu" "$rate"); done
    set_commit on
    cafe_stop_relays
    rows_of[$t]=$(( $(outbox_inserts) - rows0 ))
    sagas_in[$t]=$(( $(sagas_of "${p}durable-") + $(sagas_of "${p}cpu-") ))
    for rate in $steady_rates; do
        sagas_in[$t]=$(( ${sagas_in[$t]} + $(sagas_of "${p}steady${rate}_") ))
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
grep -h "checkpoint" "$ONCE_CLUSTER_DIR/server.log" >&2 || true   # (on the console: whether one came anyway)
read -r e2e e2e_p50 e2e_p99 e2e_relays e2e_busy <<<"${e2e_of[tabledurable]}"
read -r e2e_cpu e2e_cpu_p50 e2e_cpu_p99 e2e_cpu_relays e2e_cpu_busy <<<"${e2e_of[tablecpu]}"
steady_rows=""
for rate in $steady_rates; do
    steady_rows+=$(printf '  at a steady %4d orders/s                  %7s  %7s %7s  %7s   (target p99 <= 50)' "$rate" \
        ${steady[tabledurable$rate]} ${steady[tablecpu$rate]})$'\n'
done

# The transports side by side (every row from this run).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2fx", a / b }'; }
transport_rows=""
if [ -n "${e2e_of[waldurable]:-}" ]; then
    read -r wd wd50 wd99 _ wdbusy <<<"${e2e_of[waldurable]}"
    read -r wc wc50 wc99 _ wcbusy <<<"${e2e_of[walcpu]}"
    read -r td td50 td99 _ tdbusy <<<"${e2e_of[tabledurable]}"
    read -r tc tc50 tc99 _ tcbusy <<<"${e2e_of[tablecpu]}"
    transport_rows+=$'\n'"WAL transport vs table transport, end to end, same run (wal_level = logical for both;"$'\n'
    transport_rows+="in the order $transports; a slot per relay, --transport wal, once.transport = 'wal'):"$'\n'
    transport_rows+=$(printf '%-44s %15s %15s %9s' "" "table" "WAL" "WAL/table")$'\n'
    transport_rows+=$(printf '%-44s %15s %15s %9s   (target WAL >= 2000)' "sagas/s, $orders orders, durable" "$td" "$wd" "$(ratio "$wd" "$td")")$'\n'
    transport_rows+=$(printf '%-44s %15s %15s %9s' "sagas/s, synchronous_commit=off" "$tc" "$wc" "$(ratio "$wc" "$tc")")$'\n'
    transport_rows+=$(printf '%-44s %15s %15s' "CPU busy (of all cores), durable / off" "$tdbusy / $tcbusy" "$wdbusy / $wcbusy")$'\n'
    transport_rows+="latency, created -> finished, ms, p50 / p99                       p99 WAL/table"$'\n'
    transport_rows+=$(printf '  %-42s %15s %15s %9s' "at saturation, durable" "$td50 / $td99" "$wd50 / $wd99" "$(ratio "$wd99" "$td99")")$'\n'
    transport_rows+=$(printf '  %-42s %15s %15s %9s' "at saturation, synchronous_commit=off" "$tc50 / $tc99" "$wc50 / $wc99" "$(ratio "$wc99" "$tc99")")$'\n'
    for mode in durable cpu; do
        for rate in $steady_rates; do
            read -r a50 a99 <<<"${steady[table$mode$rate]}"
            read -r b50 b99 <<<"${steady[wal$mode$rate]}"
            transport_rows+=$(printf '  %-42s %15s %15s %9s%s' "at a steady $rate orders/s, $([ $mode = durable ] && echo durable || echo sync commit off)" \
                "$a50 / $a99" "$b50 / $b99" "$(ratio "$b99" "$a99")" "$([ "$rate" = 500 ] && [ $mode = durable ] && echo '   (target WAL p99 <= 50)')")$'\n'
        done
    done
    transport_rows+="round trip per step (command committed -> reply applied), p50 ms, durable: stock / payment / notify"$'\n'
    for rate in $steady_rates; do
        transport_rows+=$(printf '  %-30s %24s %24s' "at a steady $rate orders/s" "${steps_of[table$rate]}" "${steps_of[wal$rate]}")$'\n'
    done
    transport_rows+="rows inserted into once.outbox (what did not ride the stream; 6 messages per saga: 3 commands, 3 replies):"$'\n'
    transport_rows+="  table run ${rows_of[table]} for ${sagas_in[table]} sagas; WAL run ${rows_of[wal]} for ${sagas_in[wal]} sagas"$'\n'
fi
export STEADY_ROWS=$steady_rows TRANSPORT_ROWS=$transport_rows LOAD_START=$load_start LOAD_END=$load_end
report=$(awk -v secs="$secs" -v clients="$order_clients" -v orders="$orders" \
    -v b="${durable[baseline]}" -v o="${durable[outbox]}" -v s="${durable[saga]}" -v i="${durable[inbox]}" \
    -v cb="${cpu[baseline]}" -v co="${cpu[outbox]}" -v cs="${cpu[saga]}" -v ci="${cpu[inbox]}" \
    -v w="${durable[same]}" -v cw="${cpu[same]}" \
    -v e="$e2e" -v ep50="$e2e_p50" -v ep99="$e2e_p99" \
    -v ce="$e2e_cpu" -v cer="$e2e_cpu_relays" -v er="$e2e_relays" -v eb="$e2e_busy" -v ceb="$e2e_cpu_busy" -v cep50="$e2e_cpu_p50" -v cep99="$e2e_cpu_p99" '
function ms(t) { return 1000.0 / t }
function row(name, d, c) { printf "%-46s %9.0f %9.2f   %9.0f %9.2f\n", name, d, ms(d), c, ms(c) }
BEGIN {
  printf "CampusCafe saga benchmark (4-step flow: order, stock, payment, notification)\n";
  printf "machine: %s cores shared with other sessions; fsync=on; parts: pgbench -c 4 -j 2, %ss each\n", ENVIRON["NPROC"], secs;
  printf "load average (1, 5, 15 min): %s at the start, %s at the end\n\n", ENVIRON["LOAD_START"], ENVIRON["LOAD_END"];
  printf "%-46s %19s   %19s\n", "", "durable commits", "synchronous_commit=off";
  printf "%-46s %9s %9s   %9s %9s\n", "part", "sagas/s", "ms/saga", "sagas/s", "ms/saga";
  row("baseline: hand-written SQL, minimal writes", b, cb);
  row("same: hand-written PL/pgSQL, the same writes", w, cw);
  row("outbox: 4 x once.send", o, co);
  row("saga: saga_start + 3 x saga_reply (+ sends)", s, cs);
  row("inbox: 6 x once.deliver (no-op handler)", i, ci);
  row("end to end (table), " orders " orders, " clients " sessions", e, ce);
  printf "\nend to end vs the 1,000 sagas/s target: %.2f durable, %.2f without the WAL flush\n", e / 1000, ce / 1000;
  printf "CPU busy during the end-to-end runs: %.0f%% durable, %.0f%% without the WAL flush (of all cores)\n", 100 * eb, 100 * ceb;
  printf "latency, created -> finished, ms:               p50      p99     p50      p99\n";
  printf "  at saturation (%4d orders at once)        %7s  %7s %7s  %7s\n", orders, ep50, ep99, cep50, cep99;
  printf "%s", ENVIRON["STEADY_ROWS"];
  printf "%s", ENVIRON["TRANSPORT_ROWS"];
  printf "\nsaga logic vs hand-written PL/pgSQL doing the same writes: %.2fx the cost (durable commits; target <= 1.15)\n", ms(s) / ms(w);
  printf "saga logic vs hand-written PL/pgSQL doing the same writes: %.2fx without waiting for the WAL flush (the CPU cost)\n", ms(cs) / ms(cw);
  printf "saga logic vs the minimal writes (baseline): %.2fx durable, %.2fx without the WAL flush (report)\n", ms(s) / ms(b), ms(cs) / ms(cb);
  # Shares of one end-to-end saga in machine time, from the CPU figures (at saturation each
  # part keeps the cores busy, so 1/throughput is its machine time per saga; the end-to-end
  # run is scaled by how busy the machine was).
  t = ms(ce) * ceb; logic = ms(cs) - ms(co); if (logic < 0) logic = 0;
  rest = t - ms(cs) - ms(ci); if (rest < 0) rest = 0;
  printf "\nwhere one end-to-end saga spends the machine (synchronous_commit=off: %.2f ms of wall time\n", ms(ce);
  printf "per saga x %.0f%% busy = %.2f ms of the whole machine):\n", 100 * ceb, t;
  printf "  outbox: the saga'\''s 4 sends                   %5.2f ms  %5.1f%%\n", ms(co), 100 * ms(co) / t;
  printf "  saga logic: state machine + storage          %5.2f ms  %5.1f%%\n", logic, 100 * logic / t;
  printf "  inbox: 6 deliveries                          %5.2f ms  %5.1f%%\n", ms(ci), 100 * ms(ci) / t;
  printf "  the rest: relays, services, claims and acks  %5.2f ms  %5.1f%%\n", rest, 100 * rest / t;
  printf "    of it, the 6 relay processes themselves      %5.2f ms  %5.1f%%   (their CPU time over the run;\n", cer * t, 100 * cer;
  printf "    the remainder is database work: claims, acks, deliveries, service handlers; durable run: %.1f%%)\n", 100 * er;
  printf "\nbound: the hand-written baseline alone, doing only the orchestrator'\''s writes on all cores,\n";
  printf "reaches %.0f sagas/s durable and %.0f without the WAL flush: %s\n", b, cb,
         (cb < 1000 ? "1,000 sagas/s is beyond this machine for any implementation of these writes" : "1,000 sagas/s fits these writes");
}')
echo "$report" | tee "$out"
