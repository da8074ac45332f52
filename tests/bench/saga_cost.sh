#!/usr/bin/env bash
# Where the saga logic's extra cost goes: the CampusCafe saga driven directly (saga_start + 3
# saga_reply, as saga.sh's "saga" part) against hand-written SQL doing the orchestrator's
# minimal writes (saga.sh's "baseline") and hand-written PL/pgSQL doing the same writes
# (saga.sh's "same", tools/saga_same_writes.sql), per saga: the statements each runs (pg_stat_statements with
# track = all, so the statements the C++ entry points run through SPI are counted too), their
# execution time and the WAL bytes they write, and the whole WAL per saga (pg_current_wal_lsn
# before and after, commit records included). On both transports: with once.transport = 'wal'
# the saga's commands ride the WAL as logical messages instead of outbox rows.
# One client, SAGA_COST_SAGAS sagas per kind (default 2000), synchronous_commit = off (a commit's
# flush is no part of what the logic costs), after a warm-up of 200.
# Results: tests/bench/results/saga_cost.txt (saga_cost-pg18.txt with ONCE_BENCH_PG=18).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/server.sh"
source "$root/tests/lib/cluster.sh"
n=${SAGA_COST_SAGAS:-2000}
out=$(bench_results saga_cost)
work=$(mktemp -d)
trap 'once_cluster_stop; rm -rf "$work"' EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
once_cluster_start shared_preload_libraries=pg_once,pg_stat_statements pg_stat_statements.track=all \
    pg_stat_statements.max=1000 wal_level=logical synchronous_commit=off fsync=on
psql -qX -d postgres -c "CREATE DATABASE bench" >/dev/null
sql() { psql -qXAt -v ON_ERROR_STOP=1 -d bench "$@"; }
sql >/dev/null <<'SQL'
CREATE EXTENSION pg_once;
CREATE EXTENSION pg_stat_statements;
CREATE SEQUENCE bench_seq;
CREATE TABLE base_orders (id text PRIMARY KEY, data jsonb, status text, step text);
CREATE TABLE base_queue (id bigserial PRIMARY KEY, topic text, payload jsonb);
SQL
sed -n '/SELECT once.saga_define/,/}\$\$);/p' "$root/examples/campus_cafe/orders.sql" | sql >/dev/null
sql -f "$here/tools/saga_same_writes.sql" >/dev/null


# KIND SCRIPT TRANSPORT: runs n sagas and prints the per-saga account.
account() {
    local kind=$1 script=$2 tr=$3
    PGOPTIONS="-c once.transport=$tr" pgbench -n -M prepared -t 200 -c 1 -f "$script" bench >/dev/null 2>&1
    sql -c "CHECKPOINT" -c "SELECT pg_stat_statements_reset()" >/dev/null
    local l0 l1 t0 t1
    l0=$(sql -c "SELECT pg_current_wal_lsn()")
    t0=$(date +%s.%N)
    PGOPTIONS="-c once.transport=$tr" pgbench -n -M prepared -t "$n" -c 1 -f "$script" bench >"$work/pgbench.log" 2>&1 ||
        { cat "$work/pgbench.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    l1=$(sql -c "SELECT pg_current_wal_lsn()")
    local wal
    wal=$(sql -c "SELECT round(pg_wal_lsn_diff('$l1', '$l0') / $n)")
    {
        printf '\n%s (once.transport = %s): %s sagas, %.3f ms wall per saga, %s WAL bytes per saga\n' \
            "$kind" "$tr" "$n" "$(awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { print (b - a) * 1000 / n }')" "$wal"
        sql -F '|' -c "
            SELECT to_char(calls::numeric / $n, 'FM990.0'), to_char(total_exec_time * 1000 / $n, 'FM99990'),
                   to_char(wal_bytes::numeric / $n, 'FM999990'), to_char(rows::numeric / $n, 'FM990.0'),
                   CASE WHEN toplevel THEN 'top ' ELSE '  in ' END ||
                   left(regexp_replace(query, '\s+', ' ', 'g'), 110)
              FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'bench')
               AND calls >= $n / 2 AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE 'SELECT nextval%'
             ORDER BY toplevel DESC, total_exec_time DESC" |
            awk -F'|' 'BEGIN { printf "  %8s %9s %9s %8s  %s\n", "calls", "exec us", "WAL B", "rows", "statement (top: sent by the client; in: run inside one)" }
                       { printf "  %8s %9s %9s %8s  %s\n", $1, $2, $3, $4, $5 }'
        sql -F '|' -c "
            SELECT count(*) FILTER (WHERE NOT toplevel) / 1, sum(calls) FILTER (WHERE NOT toplevel)::numeric / $n,
                   sum(calls) FILTER (WHERE toplevel)::numeric / $n
              FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'bench')
               AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE 'SELECT nextval%'" |
            awk -F'|' '{ printf "  per saga: %.1f statements from the client, %.1f run inside them\n", $3, $2 }'
    } | tee -a "$out"
}
{
    echo "# saga_cost: $(date -u '+%Y-%m-%d %H:%M UTC'), PostgreSQL $(sql -c 'SHOW server_version_num'), $(nproc) cores," \
         "load average at start $load_start, $n sagas per kind, one client, synchronous_commit=off"
} | tee -a "$out"
account "hand-written SQL, the orchestrator's minimal writes" "$here/tools/saga_baseline.pgbench" table
account "hand-written PL/pgSQL, the same writes (tools/saga_same_writes.sql)" "$here/tools/saga_same.pgbench" table
account "saga_start + 3 x saga_reply" "$here/tools/saga_saga.pgbench" table
account "saga_start + 3 x saga_reply" "$here/tools/saga_saga.pgbench" wal
echo "# load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
