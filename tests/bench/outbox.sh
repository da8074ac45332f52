#!/usr/bin/env bash
# Outbox benchmark: every figure is a ratio against a baseline measured in the same run.
#   producer   BEGIN; INSERT order; once.send; COMMIT  vs  the same with a plain INSERT into an
#              identically shaped table (a hand-written outbox), and vs the INSERT order alone
#              (no enqueue) (1 and 16 clients, fsync=on, synchronous_commit=on,
#              a relay LISTENing), with pg_once preloaded, and without (NOTIFY per transaction);
#              also keyed sends (100k keys, and 10 hot keys: per-key order settled at commit)
#   batch      once.send_many of 1000 / 10000 payloads (10000 also with 100 keys)  vs  one
#              INSERT ... SELECT of as many rows
#   drain      claim_locked(100) + ack (one transaction; in one statement, and as a relay does it:
#              BEGIN, claim, ack, COMMIT) and the leased claim(100) + ack (two transactions),
#              2 clients, 100k prefilled, commits without waiting for fsync  vs  a hand-written
#              SKIP LOCKED DELETE, and vs the naive status design (UPDATE to processing, to sent)
#   blocked    the same unfiltered drains beside 20k messages of one key waiting behind its dead
#              head  vs  on a clean outbox
#   topics     a topic-filtered drain (claim_locked and claim with topics => '{t.drain}') beside
#              a 100k and a 1M backlog of another topic  vs  the same drain on a clean outbox
#   wal        WAL bytes per message from send to ack (locked and leased)  vs  INSERT + DELETE
#   dead rows  claim latency with 100k dead rows and an old REPEATABLE READ snapshot  vs  clean,
#              for pg_once and for a plain SKIP LOCKED queue
#   wake-up    commit -> relay wake-up latency (notifier, and NOTIFY per transaction)
# Results: tests/bench/results/outbox.txt. Usage: tests/bench/outbox.sh; ONCE_BENCH_PG=18 runs it
# on PostgreSQL 18 (build/pg18) and writes results/outbox-pg18.txt (tests/bench/server.sh).
# OUTBOX_BENCH_SECONDS (default 10) sets the length of each timed run. OUTBOX_BENCH_ONLY=producer
# runs the producer section only; =batch the batch section only; =drain the drain, topics,
# blocked-key and WAL sections only; =buckets the key lock buckets' cost only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/server.sh"   # ONCE_BENCH_PG: which server; bench_results NAME
# libpq's headers, from the system pg_config (cluster.sh puts the staged server first in PATH)
libpq_include=$(${PG_CONFIG:-pg_config} --includedir)
libpq_libdir=$(${PG_CONFIG:-pg_config} --libdir)
source "$here/../lib/cluster.sh"
secs=${OUTBOX_BENCH_SECONDS:-10}
result_file=$(bench_results outbox)
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-outbox-bench.XXXXXX")
[ "$(id -u)" = 0 ] && chmod 755 "$work"
background=()
cleanup() {
    for pid in "${background[@]}"; do kill "$pid" 2>/dev/null || true; done
    once_cluster_stop
    rm -rf "$work"
}
trap cleanup EXIT

cc -O2 -I"$libpq_include" -o "$work/outbox_wakeup" "$here/outbox_wakeup.c" -L"$libpq_libdir" -lpq

server_opts=(fsync=on synchronous_commit=on max_wal_size=4GB checkpoint_timeout=30min
             shared_preload_libraries=pg_once)
once_cluster_start "${server_opts[@]}"

out() { echo "$*" | tee -a "$work/results"; }
sql() { psql -qXAt -v ON_ERROR_STOP=1 -d bench "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
# tps of a pgbench run: pgbench_tps CLIENTS SCRIPT [more pgbench options]
pgbench_tps() {
    local clients=$1 script=$2
    shift 2
    pgbench -n -c "$clients" -j "$clients" -T "$secs" -f "$script" "$@" bench 2>&1 \
        | awk '/^tps = / { print $3 }'
}

psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE bench" >/dev/null
sql <<'SQL'
CREATE EXTENSION pg_once;
CREATE TABLE orders (id bigserial PRIMARY KEY, customer int NOT NULL, total numeric NOT NULL);
-- The hand-written outbox: the same columns as once.outbox, a primary key, nothing else.
CREATE TABLE plain_outbox (LIKE once.outbox INCLUDING DEFAULTS);
ALTER TABLE plain_outbox ADD PRIMARY KEY (id), ALTER COLUMN pos SET DEFAULT gen_random_uuid(),
    ALTER COLUMN visible_at SET DEFAULT now();
-- The naive design of the source texts: a status column with an index, updated twice.
CREATE TABLE naive_outbox (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), topic text NOT NULL,
    payload jsonb NOT NULL, status text NOT NULL DEFAULT 'pending', locked_by text,
    locked_until timestamptz, created_at timestamptz NOT NULL DEFAULT now(), sent_at timestamptz);
CREATE INDEX naive_outbox_status ON naive_outbox (status, created_at);
SQL

{
    echo "pg_once outbox benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, ${secs}s per run"
    echo "PostgreSQL $(sql -c 'SHOW server_version'), fsync=on, synchronous_commit=on"
    echo
} >"$work/results"

# ------------------------------------------------------------------------------ producer
# A relay LISTENs during the producer runs (it reads notifications; it does not drain).
listen_relay() {
    # idle between statements, so it consumes its notifications like a relay
    psql -qX -d bench >/dev/null 2>&1 <<'SQL' &
SET application_name = 'bench_listener';
LISTEN once_outbox;
SELECT 1 \watch 0.2
SQL
    listener=$!
    background+=($listener)
}
stop_listener() {
    kill "$listener" 2>/dev/null || true
    sql -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'bench_listener'" >/dev/null
}
cat >"$work/send.sql" <<'SQL'
\set c random(1, 100000)
BEGIN;
INSERT INTO orders (customer, total) VALUES (:c, 42.50);
SELECT once.send('order.created', '{"order": 1, "customer": 2, "total": "42.50", "lines": [1, 2, 3]}');
COMMIT;
SQL
cat >"$work/plain.sql" <<'SQL'
\set c random(1, 100000)
BEGIN;
INSERT INTO orders (customer, total) VALUES (:c, 42.50);
INSERT INTO plain_outbox (id, topic, payload) VALUES (gen_random_uuid(), 'order.created', '{"order": 1, "customer": 2, "total": "42.50", "lines": [1, 2, 3]}');
COMMIT;
SQL
# The business write alone, no enqueue at all: the other baseline users compare with.
cat >"$work/bare.sql" <<'SQL'
\set c random(1, 100000)
BEGIN;
INSERT INTO orders (customer, total) VALUES (:c, 42.50);
COMMIT;
SQL
reset_tables() {
    sql -c "TRUNCATE orders, plain_outbox, naive_outbox, once.outbox" -c "CHECKPOINT" >/dev/null
}
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
# The disk's fsync rate swings with the other jobs on this machine, so plain and once.send
# runs alternate (3 pairs of secs/2 each) and the medians are compared.
producer_round() {  # producer_round LABEL [SEND_SCRIPT] CLIENT_COUNTS...
    local label=$1 clients r send_script="$work/send.sql"
    shift
    case "${1:-}" in /*) send_script=$1; shift ;; esac
    for clients in "$@"; do
        local plains=() sends=() bares=()
        for r in 1 2 3; do
            reset_tables
            plains+=("$(secs=$((secs / 2)) pgbench_tps "$clients" "$work/plain.sql")")
            reset_tables
            sends+=("$(secs=$((secs / 2)) pgbench_tps "$clients" "$send_script")")
            reset_tables
            bares+=("$(secs=$((secs / 2)) pgbench_tps "$clients" "$work/bare.sql")")
        done
        local plain send bare
        plain=$(median3 "${plains[@]}")
        send=$(median3 "${sends[@]}")
        bare=$(median3 "${bares[@]}")
        out "producer $label, $clients client(s): INSERT + hand-written outbox INSERT ${plains[*]} tps (median $plain), INSERT + once.send ${sends[*]} tps (median $send), INSERT alone ${bares[*]} tps (median $bare); once.send vs hand-written outbox $(ratio "$send" "$plain") (target >= 0.95, floor 0.85), vs no enqueue $(ratio "$send" "$bare"), hand-written outbox vs no enqueue $(ratio "$plain" "$bare")"
    done
}
# ------------------------------------------------------------------------------ key lock buckets
# Keys are locked at commit by bucket (256 of them), not one by one: two
# committers of different keys wait for each other when their keys share a bucket, which
# per-key locks never made them do. 16 clients send one keyed message per transaction, each
# from 1400 keys of its own: keys spread so no two clients share a bucket (what per-key locks
# gave) vs keys drawn from 100k at random (the usual case: sometimes shared) vs keys all in one
# bucket (the worst case: every commit waits for the previous one).
bucket_round() {
    sql >/dev/null <<'SQL'
CREATE TABLE IF NOT EXISTS bucket_keys (mode text, client int, n int, g int, PRIMARY KEY (mode, client, n));
TRUNCATE bucket_keys;
WITH k AS (SELECT g, once._outbox_key_bucket('customer-' || g) AS b
             FROM generate_series(1, 6000000) g),
     spread AS (SELECT b AS client, row_number() OVER (PARTITION BY b ORDER BY g) - 1 AS n, g
                  FROM k WHERE b < 16),
     one AS (SELECT (row_number() OVER (ORDER BY g) - 1) % 16 AS client,
                    (row_number() OVER (ORDER BY g) - 1) / 16 AS n, g FROM k WHERE b = 0)
INSERT INTO bucket_keys
SELECT 'spread', client, n, g FROM spread WHERE n < 1400
UNION ALL SELECT 'one', client, n, g FROM one WHERE n < 1400;
SQL
    local mode
    for mode in spread one; do
        cat >"$work/send_bucket_$mode.sql" <<SQL
\set n random(0, 1399)
SELECT g FROM bucket_keys WHERE mode = '$mode' AND client = :client_id AND n = :n \gset
BEGIN;
INSERT INTO orders (customer, total) VALUES (:n, 42.50);
SELECT once.send('order.created', '{"order": 1, "customer": 2, "total": "42.50", "lines": [1, 2, 3]}', key => 'customer-' || :g);
COMMIT;
SQL
    done
    cat >"$work/send_bucket_random.sql" <<'SQL'
\set n random(1, 100000)
SELECT :n AS g \gset
BEGIN;
INSERT INTO orders (customer, total) VALUES (:n, 42.50);
SELECT once.send('order.created', '{"order": 1, "customer": 2, "total": "42.50", "lines": [1, 2, 3]}', key => 'customer-' || :g);
COMMIT;
SQL
    local spreads=() randoms=() ones=() r
    for r in 1 2 3; do
        reset_tables
        spreads+=("$(secs=$((secs / 2)) pgbench_tps 16 "$work/send_bucket_spread.sql")")
        reset_tables
        randoms+=("$(secs=$((secs / 2)) pgbench_tps 16 "$work/send_bucket_random.sql")")
        reset_tables
        ones+=("$(secs=$((secs / 2)) pgbench_tps 16 "$work/send_bucket_one.sql")")
    done
    local spread random one
    spread=$(median3 "${spreads[@]}")
    random=$(median3 "${randoms[@]}")
    one=$(median3 "${ones[@]}")
    out "key lock buckets, 16 clients, one keyed send per transaction: keys of distinct buckets per client ${spreads[*]} tps (median $spread), random keys of 100k ${randoms[*]} tps (median $random), every key in one bucket ${ones[*]} tps (median $one); random vs distinct buckets $(ratio "$random" "$spread"), one bucket vs distinct buckets $(ratio "$one" "$spread")"
}
if [ "${OUTBOX_BENCH_ONLY:-}" = buckets ]; then
    listen_relay
    out "== key lock buckets: what sharing a commit-time lock bucket costs producers"
    bucket_round
    stop_listener
    cp "$work/results" "$(bench_results outbox_buckets)"
    exit 0
fi

[ "${OUTBOX_BENCH_ONLY:-}" != batch ] && [ "${OUTBOX_BENCH_ONLY:-}" != drain ] && {
listen_relay
out "== producer: BEGIN; INSERT order; once.send; COMMIT vs the same with an INSERT into a hand-written outbox table, and vs the INSERT alone (no enqueue)"
producer_round "(pg_once preloaded: coalesced NOTIFY)" 1 16
sed "s/}');\$/}', key => 'customer-' || :c);/" "$work/send.sql" >"$work/send_keyed.sql"
sed "s/}');\$/}', key => 'customer-' || (:c % 10));/" "$work/send.sql" >"$work/send_hot.sql"
producer_round "keyed, 100k keys (pg_once preloaded)" "$work/send_keyed.sql" 1 16
producer_round "keyed, 10 hot keys (pg_once preloaded)" "$work/send_hot.sql" 16
out "notifier: $(sql -c "SELECT notifies FROM once.outbox_notifier_status()") NOTIFYs in this database so far"
stop_listener
if [ "${OUTBOX_BENCH_ONLY:-}" = producer ]; then
    cp "$work/results" "$(bench_results outbox_producer)"
    exit 0
fi
}

# ------------------------------------------------------------------------------ batch
batch_round() {  # batch_round ROWS KEYS: send_many of ROWS payloads (KEYS distinct keys, 0 = keyless)
    local rows=$1 keys=$2 key_arg=""
    [ "$keys" -gt 0 ] && key_arg=", (SELECT array_agg('k' || (i % $keys)) FROM generate_series(1, $rows) AS i)"
    cat >"$work/batch_send.sql" <<SQL
SELECT count(*) FROM once.send_many('bulk.import', (SELECT array_agg(jsonb_build_object('i', i, 'sku', 'A-' || i)) FROM generate_series(1, $rows) AS i)$key_arg);
SQL
    cat >"$work/batch_plain.sql" <<SQL
INSERT INTO plain_outbox (id, topic, payload) SELECT gen_random_uuid(), 'bulk.import', p FROM unnest((SELECT array_agg(jsonb_build_object('i', i, 'sku', 'A-' || i)) FROM generate_series(1, $rows) AS i)) AS p;
SQL
    reset_tables
    plain=$(pgbench_tps 1 "$work/batch_plain.sql")
    reset_tables
    send=$(pgbench_tps 1 "$work/batch_send.sql")
    out "batch $rows$([ "$keys" -gt 0 ] && echo " ($keys keys)"): plain $(awk -v t="$plain" -v r="$rows" 'BEGIN { printf "%.0f", t * r }') rows/s, send_many $(awk -v t="$send" -v r="$rows" 'BEGIN { printf "%.0f", t * r }') rows/s, ratio $(ratio "$send" "$plain") (target >= 0.8; 10000: >= 1.5)"
}
[ "${OUTBOX_BENCH_ONLY:-}" != drain ] && {
out ""
out "== batch: send_many(N payloads) vs INSERT ... SELECT of N rows, 1 client"
batch_round 1000 0
batch_round 10000 0
batch_round 10000 100
}
if [ "${OUTBOX_BENCH_ONLY:-}" = batch ]; then
    cp "$work/results" "$(bench_results outbox_batch)"
    exit 0
fi
reset_tables

# ------------------------------------------------------------------------------ drain
drain_rate() {  # drain_rate SCRIPT SETUP_SQL TABLE [KEEP] -> messages per second draining 100k with 2 clients
    # KEEP: rows of TABLE that are not part of the drain (another topic's backlog)
    local keep=${4:-0}
    reset_tables
    sql -c "$2" -c "VACUUM ANALYZE" >/dev/null || exit 1
    local start end left
    start=$(date +%s.%N)
    PGOPTIONS="-c synchronous_commit=off" pgbench -n -c 2 -j 2 -t 500 -f "$1" bench >"$work/drain.log" 2>&1 || { cat "$work/drain.log" >&2; exit 1; }
    end=$(date +%s.%N)
    left=$(( $(sql -c "SELECT count(*) FROM $3") - keep ))
    [ "$left" -ge 0 ] || { echo "drain_rate: $3 holds fewer rows than the $keep kept" >&2; exit 1; }
    awk -v s="$start" -v e="$end" -v left="$left" 'BEGIN { printf "%.0f", (100000 - left) / (e - s) }'
}
cat >"$work/drain_once.sql" <<'SQL'
SELECT coalesce(array_agg(id), '{}') AS ids FROM once.claim('relay-:client_id', 100) \gset
SELECT once.ack('relay-:client_id', ids) FROM (SELECT ':ids'::uuid[] AS ids) s WHERE cardinality(ids) > 0;
SQL
cat >"$work/drain_locked.sql" <<'SQL'
SELECT once.ack('relay-:client_id', ARRAY(SELECT id FROM once.claim_locked('relay-:client_id', 100)));
SQL
cat >"$work/drain_locked_tx.sql" <<'SQL'
BEGIN;
SELECT coalesce(array_agg(id), '{}') AS ids FROM once.claim_locked('relay-:client_id', 100) \gset
SELECT once.ack('relay-:client_id', ':ids'::uuid[]);
COMMIT;
SQL
cat >"$work/drain_skip.sql" <<'SQL'
WITH c AS (SELECT id FROM plain_outbox ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
DELETE FROM plain_outbox o USING c WHERE o.id = c.id RETURNING o.id, o.topic, o.payload;
SQL
cat >"$work/drain_naive.sql" <<'SQL'
WITH c AS (SELECT id FROM naive_outbox WHERE status = 'pending' ORDER BY created_at LIMIT 100 FOR UPDATE SKIP LOCKED),
     u AS (UPDATE naive_outbox o SET status = 'processing', locked_by = 'relay-:client_id', locked_until = now() + interval '30 seconds'
             FROM c WHERE o.id = c.id RETURNING o.id)
SELECT coalesce(array_agg(id), '{}') AS ids FROM u \gset
UPDATE naive_outbox SET status = 'sent', sent_at = now(), locked_by = NULL, locked_until = NULL WHERE id = ANY (':ids'::uuid[]);
SQL
payload="'{\"order\": 1, \"customer\": 2, \"total\": \"42.50\", \"lines\": [1, 2, 3]}'"
out ""
out "== drain: 100k prefilled messages, 2 clients, batches of 100 (synchronous_commit=off: claim and ack are two commits, the DELETE one)"
fill_once="SELECT count(once.send('order.created', $payload)) FROM generate_series(1, 100000)"
# A drain of 100k takes about a second here: each figure is the median of 3 runs, the designs
# taking turns, so a spell of noise does not land on one of them.
skips=(); naives=(); onces=(); lockeds=(); locked_txs=()
for r in 1 2 3; do
    skips+=("$(drain_rate "$work/drain_skip.sql" \
        "INSERT INTO plain_outbox (id, pos, topic, payload) SELECT once._outbox_position(clock_timestamp()), gen_random_uuid(), 'order.created', $payload FROM generate_series(1, 100000)" plain_outbox)")
    naives+=("$(drain_rate "$work/drain_naive.sql" \
        "INSERT INTO naive_outbox (topic, payload, created_at) SELECT 'order.created', $payload, clock_timestamp() FROM generate_series(1, 100000)" "naive_outbox WHERE status <> 'sent'")")
    onces+=("$(drain_rate "$work/drain_once.sql" "$fill_once" once.outbox)")
    lockeds+=("$(drain_rate "$work/drain_locked.sql" "$fill_once" once.outbox)")
    locked_txs+=("$(drain_rate "$work/drain_locked_tx.sql" "$fill_once" once.outbox)")
done
skip=$(median3 "${skips[@]}"); naive=$(median3 "${naives[@]}"); once=$(median3 "${onces[@]}")
locked=$(median3 "${lockeds[@]}"); locked_tx=$(median3 "${locked_txs[@]}")
out "drain runs (msg/s): DELETE ${skips[*]}; naive ${naives[*]}; leased ${onces[*]}; locked ${lockeds[*]}; locked as a relay ${locked_txs[*]}"
out "drain: hand-written SKIP LOCKED DELETE $skip msg/s, naive two-UPDATE $naive msg/s"
out "drain: claim_locked+ack in one statement $locked msg/s, ratio $(ratio "$locked" "$skip") (target >= 0.9)"
out "drain: BEGIN; claim_locked; ack; COMMIT (4 round trips, as a relay) $locked_tx msg/s, ratio $(ratio "$locked_tx" "$skip")"
out "drain: leased claim+ack (two transactions) $once msg/s, ratio $(ratio "$once" "$skip"); vs naive $(ratio "$once" "$naive") (target >= 3)"

# ------------------------------------------------------------------------------ topics
# A relay for one topic while another topic's sink is down and its backlog grows.
cat >"$work/drain_topic_locked.sql" <<'SQL'
SELECT once.ack('relay-:client_id', ARRAY(SELECT id FROM once.claim_locked('relay-:client_id', 100, '{t.drain}')));
SQL
cat >"$work/drain_topic_leased.sql" <<'SQL'
SELECT coalesce(array_agg(id), '{}') AS ids FROM once.claim('relay-:client_id', 100, '30 seconds', '{t.drain}') \gset
SELECT once.ack('relay-:client_id', ids) FROM (SELECT ':ids'::uuid[] AS ids) s WHERE cardinality(ids) > 0;
SQL
topic_fill() {  # topic_fill BACKLOG: BACKLOG messages of t.backlog, then 100k of t.drain
    echo "DO \$\$ BEGIN FOR i IN 1..$(($1 / 10000)) LOOP
            PERFORM once.send_many('t.backlog', (SELECT array_agg($payload::jsonb) FROM generate_series(1, 10000)));
          END LOOP; END \$\$;
          SELECT count(once.send('t.drain', $payload)) FROM generate_series(1, 100000)"
}
out ""
out "== topic-filtered drain (topics => '{t.drain}', 100k, 2 clients, batches of 100) beside another topic's backlog vs on a clean outbox"
# (medians of 3 turns, as above; the 1M backlog, slow to fill, is drained once)
for mode in locked leased; do
    cleans=(); busies=()
    for r in 1 2 3; do
        cleans+=("$(drain_rate "$work/drain_topic_$mode.sql" "$(topic_fill 0)" once.outbox)")
        busies+=("$(drain_rate "$work/drain_topic_$mode.sql" "$(topic_fill 100000)" once.outbox 100000)")
    done
    clean=$(median3 "${cleans[@]}"); busy=$(median3 "${busies[@]}")
    out "topics ($mode): clean ${cleans[*]} msg/s (median $clean), beside a 100000 backlog ${busies[*]} (median $busy), ratio $(ratio "$busy" "$clean") (target >= 0.8)"
    busy=$(drain_rate "$work/drain_topic_$mode.sql" "$(topic_fill 1000000)" once.outbox 1000000)
    out "topics ($mode): beside a 1000000 backlog $busy msg/s, ratio $(ratio "$busy" "$clean") to the clean median (target >= 0.8)"
done

# ------------------------------------------------------------------------------ blocked key
# Unfiltered claims while one key's head is dead and 20k messages of that key wait behind it
# (0.1 walked them, with a key probe each, on every claim: 364 msg/s in this drain).
blocked_fill="SELECT once.send('t.blocked', $payload, key => 'hot');
    SELECT once.dead('x', id, 'refused') FROM once.claim('x', 1);
    DO \$\$ BEGIN FOR i IN 1..2 LOOP
        PERFORM once.send_many('t.blocked', (SELECT array_agg($payload::jsonb) FROM generate_series(1, 10000)),
                               (SELECT array_agg('hot'::text) FROM generate_series(1, 10000)));
    END LOOP; END \$\$;
    $fill_once"
out ""
out "== drain beside a blocked key (100k, 2 clients, batches of 100, every topic) with 20k messages waiting behind their key's dead head vs on a clean outbox"
for mode in locked once; do
    cleans=(); busies=()
    for r in 1 2 3; do
        cleans+=("$(drain_rate "$work/drain_$mode.sql" "$fill_once" once.outbox)")
        busies+=("$(drain_rate "$work/drain_$mode.sql" "$blocked_fill" once.outbox 20001)")
    done
    clean=$(median3 "${cleans[@]}"); busy=$(median3 "${busies[@]}")
    out "blocked key ($([ $mode = once ] && echo leased || echo locked)): clean ${cleans[*]} msg/s (median $clean), beside 20k blocked ${busies[*]} (median $busy), ratio $(ratio "$busy" "$clean") (target >= 0.8)"
done

# ------------------------------------------------------------------------------ WAL
reset_tables
wal_once=$(sql <<SQL
SELECT pg_current_wal_lsn() AS s \gset
SELECT count(once.send('order.created', $payload)) FROM generate_series(1, 10000);
DO \$\$ DECLARE ids uuid[]; BEGIN LOOP SELECT array_agg(id) INTO ids FROM once.claim('w', 100); EXIT WHEN ids IS NULL; PERFORM once.ack('w', ids); END LOOP; END \$\$;
SELECT (pg_wal_lsn_diff(pg_current_wal_lsn(), :'s') / 10000)::int;
SQL
)
wal_once=$(echo "$wal_once" | tail -1)
reset_tables
wal_locked=$(sql <<SQL
SELECT pg_current_wal_lsn() AS s \gset
SELECT count(once.send('order.created', $payload)) FROM generate_series(1, 10000);
DO \$\$ BEGIN WHILE once.ack('w', ARRAY(SELECT id FROM once.claim_locked('w', 100))) > 0 LOOP END LOOP; END \$\$;
SELECT (pg_wal_lsn_diff(pg_current_wal_lsn(), :'s') / 10000)::int;
SQL
)
wal_locked=$(echo "$wal_locked" | tail -1)
reset_tables
wal_plain=$(sql <<SQL
SELECT pg_current_wal_lsn() AS s \gset
INSERT INTO plain_outbox (id, topic, payload) SELECT once._outbox_position(clock_timestamp()), 'order.created', $payload FROM generate_series(1, 10000);
DO \$\$ BEGIN LOOP EXIT WHEN NOT EXISTS (SELECT 1 FROM plain_outbox);
   WITH c AS (SELECT id FROM plain_outbox ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
   DELETE FROM plain_outbox o USING c WHERE o.id = c.id; END LOOP; END \$\$;
SELECT (pg_wal_lsn_diff(pg_current_wal_lsn(), :'s') / 10000)::int;
SQL
)
wal_plain=$(echo "$wal_plain" | tail -1)
# The same with one message per transaction, as producers send them: every send and every
# INSERT its own (autocommitted) transaction, so each pays its commit record.
for i in $(seq 10000); do echo "SELECT once.send('order.created', $payload);"; done >"$work/wal_sends.sql"
for i in $(seq 10000); do
    echo "INSERT INTO plain_outbox (id, topic, payload) VALUES (once._outbox_position(clock_timestamp()), 'order.created', $payload);"
done >"$work/wal_inserts.sql"
reset_tables
s=$(sql -c "SELECT pg_current_wal_lsn()")
sql -f "$work/wal_sends.sql" >/dev/null
sql -c "DO \$\$ BEGIN WHILE once.ack('w', ARRAY(SELECT id FROM once.claim_locked('w', 100))) > 0 LOOP END LOOP; END \$\$" >/dev/null
wal_locked_tx=$(sql -c "SELECT (pg_wal_lsn_diff(pg_current_wal_lsn(), '$s') / 10000)::int")
reset_tables
s=$(sql -c "SELECT pg_current_wal_lsn()")
sql -f "$work/wal_inserts.sql" >/dev/null
sql -c "DO \$\$ BEGIN LOOP EXIT WHEN NOT EXISTS (SELECT 1 FROM plain_outbox);
   WITH c AS (SELECT id FROM plain_outbox ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
   DELETE FROM plain_outbox o USING c WHERE o.id = c.id; END LOOP; END \$\$" >/dev/null
wal_plain_tx=$(sql -c "SELECT (pg_wal_lsn_diff(pg_current_wal_lsn(), '$s') / 10000)::int")
out ""
out "== WAL per message, send to ack (10k messages, claim/ack by 100, after a checkpoint)"
out "wal: INSERT+DELETE $wal_plain bytes/msg, send+claim_locked+ack $wal_locked bytes/msg, ratio $(ratio "$wal_locked" "$wal_plain") (target <= 1.2)"
out "wal: send+claim+ack (leased) $wal_once bytes/msg, ratio $(ratio "$wal_once" "$wal_plain")"
out "wal, one message per transaction: INSERT+DELETE $wal_plain_tx bytes/msg, send+claim_locked+ack $wal_locked_tx bytes/msg, ratio $(ratio "$wal_locked_tx" "$wal_plain_tx")"
if [ "${OUTBOX_BENCH_ONLY:-}" = drain ]; then
    cp "$work/results" "$(bench_results outbox_drain)"
    exit 0
fi

# ------------------------------------------------------------------------------ dead rows + old snapshot
cat >"$work/lat_once.sql" <<'SQL'
SELECT coalesce(array_agg(id), '{}') AS ids FROM once.claim('lat', 10) \gset
SELECT once.ack('lat', ids) FROM (SELECT ':ids'::uuid[] AS ids) s WHERE cardinality(ids) > 0;
SQL
cat >"$work/lat_skip.sql" <<'SQL'
WITH c AS (SELECT id FROM plain_outbox WHERE visible_at <= now() ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED)
UPDATE plain_outbox o SET visible_at = now() + interval '30 seconds', relay = 'lat' FROM c WHERE o.id = c.id RETURNING o.id;
DELETE FROM plain_outbox WHERE relay = 'lat';
SQL
claim_latency() {  # claim_latency SCRIPT -> mean latency (ms) of the claim statement
    PGOPTIONS="-c synchronous_commit=off" pgbench -n -r -c 1 -T "$secs" -f "$1" bench 2>&1 | awk '/claim|FOR UPDATE SKIP LOCKED/ && $1 ~ /^[0-9.]+$/ { print $1; exit }'
}
prefill_ready() {
    sql -c "SELECT count(once.send('order.created', $payload)) FROM generate_series(1, 100000)" \
        -c "INSERT INTO plain_outbox (id, pos, topic, payload) SELECT once._outbox_position(clock_timestamp()), gen_random_uuid(), 'order.created', $payload FROM generate_series(1, 100000)" \
        -c "VACUUM ANALYZE once.outbox" -c "VACUUM ANALYZE plain_outbox" >/dev/null
}
reset_tables
prefill_ready
clean_once=$(claim_latency "$work/lat_once.sql")
clean_skip=$(claim_latency "$work/lat_skip.sql")
reset_tables
# An analytics query holds an old snapshot (read only, no xid) ...
psql -qX -d bench >/dev/null 2>&1 <<'SQL' &
SET application_name = 'bench_old_snapshot';
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM pg_class;
SELECT pg_sleep(600);
SQL
background+=($!)
once_wait_for "the old snapshot" 10 bash -c "[ \$(psql -qXAt -d bench -c \"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bench_old_snapshot' AND backend_xmin IS NOT NULL\") = 1 ]"
# ... while 100k messages are delivered: 100k dead rows VACUUM cannot remove, before the ready ones.
sql -c "SELECT count(once.send('order.created', $payload)) FROM generate_series(1, 100000)" >/dev/null
sql -c "DO \$\$ DECLARE ids uuid[]; BEGIN LOOP SELECT array_agg(id) INTO ids FROM once.claim('pre', 1000); EXIT WHEN ids IS NULL; PERFORM once.ack('pre', ids); END LOOP; END \$\$" >/dev/null
sql -c "INSERT INTO plain_outbox (id, pos, topic, payload) SELECT once._outbox_position(clock_timestamp()), gen_random_uuid(), 'order.created', $payload FROM generate_series(1, 100000)" \
    -c "DELETE FROM plain_outbox" >/dev/null
prefill_ready
dead_once=$(claim_latency "$work/lat_once.sql")
dead_skip=$(claim_latency "$work/lat_skip.sql")
dead_rows=$(sql -c "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'once.outbox'::regclass")
sql -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'bench_old_snapshot'" >/dev/null
out ""
out "== claim(10)+ack latency: clean vs 100k dead rows + an open REPEATABLE READ snapshot (1 client, synchronous_commit=off)"
out "dead rows: pg_once claim clean $clean_once ms, dirty $dead_once ms, ratio $(ratio "$dead_once" "$clean_once") (target <= 3); once.outbox n_dead_tup $dead_rows"
out "dead rows: plain SKIP LOCKED claim clean $clean_skip ms, dirty $dead_skip ms, ratio $(ratio "$dead_skip" "$clean_skip")"

# ------------------------------------------------------------------------------ wake-up latency
reset_tables
out ""
out "== commit -> wake-up latency (200 single-message transactions, a LISTENing relay)"
out "wake-up, notifier (once.notify_interval=$(sql -c 'SHOW once.notify_interval')): $("$work/outbox_wakeup" "host=$PGHOST port=$PGPORT user=$PGUSER dbname=bench" 200)"

# ------------------------------------------------------------------------------ without preloading
once_as_server_user pg_ctl stop -D "$ONCE_CLUSTER_DIR/data" -m fast -w >/dev/null
opts=("${server_opts[@]/shared_preload_libraries=pg_once/shared_preload_libraries=}")
once_cluster_run "$ONCE_CLUSTER_DIR" "${opts[@]}"
out ""
out "wake-up, NOTIFY per transaction (not preloaded): $("$work/outbox_wakeup" "host=$PGHOST port=$PGPORT user=$PGUSER dbname=bench" 200)"
listen_relay
out ""
producer_round "(not preloaded: NOTIFY per transaction)" 16
stop_listener

cp "$work/results" "$result_file"
echo "results written to $result_file"
