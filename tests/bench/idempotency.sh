#!/usr/bin/env bash
# Benchmark: once.run on a new key vs hand-written equivalents, and replay of a stored key vs
# running a trivial command. synchronous_commit=off, so the commit's fsync does not hide the
# CPU cost. Two baselines:
#  - "hand-written": a plpgsql function with the same guarantees (claim the key with INSERT ..
#    ON CONFLICT DO NOTHING, run the command, store its response, replay it on a retry);
#  - "lower bound": one statement that claims the key and runs the command but stores no
#    response, so it cannot replay; no correct implementation is cheaper.
# Usage: tests/bench/idempotency.sh   (BENCH_SECONDS=10 per measurement)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
out=$(bench_results idempotency)
once_cluster_start synchronous_commit=off shared_buffers=512MB max_wal_size=4GB
trap once_cluster_stop EXIT
work=$(mktemp -d); trap 'once_cluster_stop; rm -rf "$work"' EXIT

psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE bench" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d bench >/dev/null <<'SQL'
CREATE EXTENSION pg_once;
CREATE TABLE orders (id bigserial PRIMARY KEY, item text NOT NULL);
CREATE SEQUENCE key_seq;
-- The hand-written key table: what a careful team writes without pg_once.
CREATE TABLE plain_keys (scope text, key text, request_hash bytea, response jsonb,
                         expires_at timestamptz, PRIMARY KEY (scope, key));
CREATE FUNCTION hand_written_run(p_key text, p_request jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    v_response jsonb;
BEGIN
    INSERT INTO plain_keys (scope, key, request_hash, expires_at)
    VALUES ('bench', p_key, sha256(convert_to(p_request::text, 'UTF8')), now() + interval '24 hours')
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        SELECT response INTO v_response FROM plain_keys WHERE scope = 'bench' AND key = p_key;
        RETURN v_response;
    END IF;
    INSERT INTO orders (item) VALUES (p_request->>'item') RETURNING to_jsonb(id) INTO v_response;
    UPDATE plain_keys SET response = v_response WHERE scope = 'bench' AND key = p_key;
    RETURN v_response;
END $$;
-- Stored keys for the replay measurement.
SELECT once.run('replay', 'k' || i, '{"item": "latte"}', 'SELECT 1') FROM generate_series(1, 10000) i;
SQL

cat >"$work/once_new.sql" <<'SQL'
SELECT * FROM once.run('bench', nextval('key_seq')::text, '{"item": "latte", "qty": 1}',
    'INSERT INTO orders (item) VALUES ($1->>''item'') RETURNING id');
SQL
cat >"$work/plain_new.sql" <<'SQL'
WITH k AS (
    INSERT INTO plain_keys (scope, key, request_hash, response, expires_at)
    VALUES ('bench', nextval('key_seq')::text, sha256('{"item": "latte", "qty": 1}'::bytea), NULL, now() + interval '24 hours')
    ON CONFLICT DO NOTHING RETURNING key)
INSERT INTO orders (item) SELECT '{"item": "latte", "qty": 1}'::jsonb->>'item' FROM k RETURNING id;
SQL
cat >"$work/hand_new.sql" <<'SQL'
SELECT hand_written_run(nextval('key_seq')::text, '{"item": "latte", "qty": 1}');
SQL
cat >"$work/once_replay.sql" <<'SQL'
\set k random(1, 10000)
SELECT * FROM once.run('replay', 'k' || :k, '{"item": "latte"}', 'SELECT 1');
SQL
cat >"$work/trivial.sql" <<'SQL'
SELECT 1;
SQL

: >"$out"
echo "# once.run benchmark, $(date -u +%F), ${BENCH_SECONDS}s per run, $(nproc) cores, synchronous_commit=off" | tee -a "$out"
echo "# name | clients | measured tps | baseline tps | ratio (measured/baseline) | target" | tee -a "$out"
best() { echo $(( $1 > $2 ? $1 : $2 )); }
for clients in 1 8; do
    # interleave candidate and baselines twice and keep each one's best, against drift
    h1=$(bench_tps "$clients" "$work/hand_new.sql"); p1=$(bench_tps "$clients" "$work/plain_new.sql")
    m1=$(bench_tps "$clients" "$work/once_new.sql")
    h2=$(bench_tps "$clients" "$work/hand_new.sql"); p2=$(bench_tps "$clients" "$work/plain_new.sql")
    m2=$(bench_tps "$clients" "$work/once_new.sql")
    bench_result "$out" "once.run new key vs hand-written plpgsql equivalent" "$clients" \
        "$(best "$m1" "$m2")" "$(best "$h1" "$h2")" ">= 0.87 (cost <= 1.15x)"
    bench_result "$out" "once.run new key vs lower bound (no stored response)" "$clients" \
        "$(best "$m1" "$m2")" "$(best "$p1" "$p2")" "report"
done
for clients in 1 8; do
    b=$(bench_tps "$clients" "$work/trivial.sql"); m=$(bench_tps "$clients" "$work/once_replay.sql")
    bench_result "$out" "once.run replay vs SELECT 1" "$clients" "$m" "$b" "report"
done
