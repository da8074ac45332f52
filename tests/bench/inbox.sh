#!/usr/bin/env bash
# Benchmark: once.deliver with one trivial handler vs calling that handler directly in a
# transaction (what a consumer without an inbox does), 1 and 8 clients; plus the cost of
# detecting a duplicate. The handler does what the smallest real handler does: insert a row.
# Run twice: synchronous_commit=on with fsync=on (what production pays per message) and
# synchronous_commit=off (the CPU cost, which the commit's fsync otherwise hides).
# Usage: tests/bench/inbox.sh   (ONCE_STAGE_DIR as for the tests; BENCH_SECONDS=10 per measurement)
set -euo pipefail
here_bench=$(cd "$(dirname "$0")" && pwd)
source "$here_bench/server.sh"   # ONCE_BENCH_PG: which server; bench_results NAME
source "$here_bench/../lib/cluster.sh"
seconds=${BENCH_SECONDS:-5}
rounds=${BENCH_ROUNDS:-3}
out=$(bench_results inbox)
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-bench-inbox.XXXXXX")
trap 'once_cluster_stop; rm -rf "$work"' EXIT

# bench_tps CLIENTS SCRIPT: transactions per second (integer) over $seconds seconds.
bench_tps() {
    local clients=$1 script=$2
    pgbench -n -M prepared -d bench -c "$clients" -j "$clients" -T "$seconds" -f "$script" 2>"$work/pgbench.err" |
        awk '/^tps = / { printf "%d\n", $3 }' | grep . || { cat "$work/pgbench.err" >&2; return 1; }
}

cat >"$work/direct.sql" <<'SQL'
SELECT bench_handler(ROW('bench', nextval('ids')::text, 'order.created', '{"id": 1}', NULL)::once.inbound);
SQL
cat >"$work/deliver.sql" <<'SQL'
SELECT once.deliver('bench', nextval('ids')::text, 'order.created', '{"id": 1}', NULL);
SQL
cat >"$work/plain.sql" <<'SQL'
WITH r AS (
    INSERT INTO plain_inbox (source, message_id) VALUES ('bench', nextval('ids')::text)
    ON CONFLICT DO NOTHING RETURNING message_id)
SELECT bench_handler(ROW('bench', r.message_id, 'order.created', '{"id": 1}', NULL)::once.inbound) FROM r;
SQL
cat >"$work/duplicate.sql" <<'SQL'
\set k random(1, 100000)
SELECT once.deliver('old', 'dup-' || :k, 'order.created', '{"id": 1}', NULL);
SQL
cat >"$work/select1.sql" <<'SQL'
\set k random(1, 100000)
SELECT 'dup-' || :k;
SQL

setup_database() {
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE bench" >/dev/null
    psql -qX -v ON_ERROR_STOP=1 -d bench >/dev/null <<'SQL'
CREATE EXTENSION pg_once;
CREATE SEQUENCE ids;
CREATE TABLE effects (id bigserial PRIMARY KEY, message_id text NOT NULL, payload jsonb);
CREATE FUNCTION bench_handler(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO effects (message_id, payload) VALUES (msg.message_id, msg.payload);
END $$;
SELECT once.subscribe('order.*', 'bench_handler(once.inbound)');
-- the hand-written inbox a careful team writes without pg_once
CREATE TABLE plain_inbox (source text, message_id text, received_at timestamptz DEFAULT now(),
                          PRIMARY KEY (source, message_id));
-- server-side cost per call, without client round trips: microseconds per call of `call`
CREATE FUNCTION us_per_call(call text, n int) RETURNS float8 LANGUAGE plpgsql AS $f$
DECLARE t0 timestamptz; t1 timestamptz; t2 timestamptz;
BEGIN
    EXECUTE format($l$CREATE OR REPLACE FUNCTION pg_temp.loop_call(n int) RETURNS void LANGUAGE plpgsql AS
        $b$ BEGIN FOR i IN 1..n LOOP PERFORM %s; END LOOP; END $b$$l$, call);
    EXECUTE $l$CREATE OR REPLACE FUNCTION pg_temp.loop_empty(n int) RETURNS void LANGUAGE plpgsql AS
        $b$ BEGIN FOR i IN 1..n LOOP PERFORM 'dup-' || (i % 100000 + 1); END LOOP; END $b$$l$;
    t0 := clock_timestamp(); PERFORM pg_temp.loop_empty(n);
    t1 := clock_timestamp(); PERFORM pg_temp.loop_call(n);
    t2 := clock_timestamp();
    RETURN extract(epoch FROM (t2 - t1) - (t1 - t0)) * 1e6 / n;
END $f$;
-- received ids for the duplicate measurement
INSERT INTO once.inbox (source, message_id, topic)
SELECT 'old', 'dup-' || i, 'order.created' FROM generate_series(1, 100000) i;
VACUUM ANALYZE;
SQL
}

# compare NAME CLIENTS CANDIDATE BASELINE TARGET: interleave candidate and baseline $rounds
# times and keep each one's best (other work on the machine only ever slows a run down).
compare() {
    local name=$1 clients=$2 candidate=$3 baseline=$4 target=$5 b=0 m=0 t i
    for i in $(seq 1 "$rounds"); do
        t=$(bench_tps "$clients" "$baseline"); [ "$t" -gt "$b" ] && b=$t
        t=$(bench_tps "$clients" "$candidate"); [ "$t" -gt "$m" ] && m=$t
    done
    log "$name | $clients | $m | $b | $(awk -v b="$b" -v m="$m" 'BEGIN { printf "%.2f", b / m }') | $target"
}

: >"$out"
log() { echo "$*" | tee -a "$out"; }
log "# once.deliver benchmark, $(date -u +%F), pgbench -M prepared, best of $rounds interleaved ${seconds}s runs, $(nproc) cores (shared with other work: expect noise)"
log "# handler: plpgsql, inserts one row. baseline: SELECT handler(msg) as one transaction."
log "# mode | clients | deliver tps | baseline tps | cost ratio (baseline/deliver) | target"
for mode in "synchronous_commit=on fsync=on" "synchronous_commit=off fsync=off"; do
    # shellcheck disable=SC2086
    once_cluster_start $mode shared_buffers=512MB max_wal_size=4GB
    setup_database
    for clients in 1 8; do
        compare "deliver vs handler alone, $mode" "$clients" "$work/deliver.sql" "$work/direct.sql" "<= 1.30"
        compare "deliver vs hand-written INSERT ON CONFLICT + handler, $mode" "$clients" \
            "$work/deliver.sql" "$work/plain.sql" "report"
    done
    if [ "$mode" = "synchronous_commit=off fsync=off" ]; then
        for clients in 1 8; do
            compare "duplicate deliver vs SELECT of the same id, $mode" "$clients" \
                "$work/duplicate.sql" "$work/select1.sql" "report"
        done
        for call in "once.deliver('old', 'dup-' || (i % 100000 + 1), 'order.created', '{\"id\": 1}', NULL)" \
                    "once.receive('old', 'dup-' || (i % 100000 + 1))" \
                    "once.receive('new', 'new-' || i)" \
                    "once.deliver('bench', 'loop-' || i, 'order.created', '{\"id\": 1}', NULL)" \
                    "bench_handler(ROW('bench', 'direct-' || i, 'order.created', '{\"id\": 1}', NULL)::once.inbound)"; do
            us=$(psql -qtAX -d bench -c "SELECT round(us_per_call(\$c\$$call\$c\$, 20000)::numeric, 1)")
            log "server-side cost per call | $call | ${us} us"
        done
    fi
    once_cluster_stop
done
log "# fresh message ids from a sequence in every run; duplicates: random picks among 100000 stored ids"
