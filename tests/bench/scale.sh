#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Benchmark: how pg_once's cost grows with the work. One table of curves: each row measures
# one cost of pg_once at several sizes, each size against a baseline measured in the same run
# (the two take turns at running first). Results are appended to
# tests/bench/results/scale.txt (scale-pg18.txt with ONCE_BENCH_PG=18).
#
# Every figure is a COST PER OPERATION (lower is better): ms per pgbench transaction, µs per
# drained message, MB of peak RSS. Columns of a row:
#   SIZE: PG_ONCE / BASELINE = RATIO   per size; ratio = pg_once's cost / the baseline's
#   growth                             pg_once's cost at the largest size / at the smallest
#                                      (the baseline's growth in brackets)
#   linear <= X                        the target: per-operation cost grows no faster than the
#                                      size, i.e. growth <= largest size / smallest size
# Rows, and what "linear" means for each:
#  1a claim latency: pgbench, 2 clients, BEGIN; once.ack(once.claim_locked(100)); ROLLBACK
#     (the rollback keeps the backlog at its size through the run), at a backlog of 10k, 100k,
#     1M and 10M unkeyed messages, vs a hand-written queue table of the same size (bigserial
#     primary key) and BEGIN; DELETE of the first 100 FOR UPDATE SKIP LOCKED; ROLLBACK.
#     Linear: the latency at 10M is at most 1000x the latency at 10k.
#  1b relay-less drain: one session claims 100, acks them and commits, in a loop, for
#     SCALE_SECONDS or until the backlog is empty; µs per message, vs the same loop deleting
#     from the hand-written queue. Linear: the cost per message at 10M <= 1000x that at 10k.
#  2a keyed send: pgbench, 2 clients, once.send with a key drawn from K distinct keys, with
#     one message per key already in the outbox, K = 1, 1k, 100k, 1M, vs a plain INSERT into a
#     table with a key column (indexed with the id, as per-key order needs). Linear: ms per
#     send at 1M keys <= 1,000,000x that at 1 key.
#  2b keyed drain: the drain of 1b over what 2a left (K keys; one key yields one message per
#     claim: its order), vs the same loop on the plain table. Linear: as 2a, per message.
#  3  publish grants: pgbench, 2 clients, a non-superuser producer role sends on one of N
#     topics, each its own once.grant_publish pattern, N = 1, 100, 10,000, vs the same role
#     sending with a single grant. Linear: ms per send with 10,000 grants <= 10,000x with 1.
#  4  saga start + reply: pgbench, 2 clients, once.saga_start of a 2-step saga and
#     once.saga_reply of its first step, with 1k, 100k and 1M sagas already started, vs an
#     INSERT + UPDATE of a plain saga table holding as many rows. Linear: ms per saga at 1M
#     <= 1000x that at 1k.
#  5  relay memory: once-relay's peak RSS (VmHWM of /proc/PID/status) while it drains a
#     backlog of 100k, 1M and 10M messages to stdout (/dev/null); the baseline of every size
#     is the 100k drain of the same run (so the 100k ratio is 1). Linear: peak RSS at 10M
#     <= 100x that at 100k (a relay with bounded batches should stay flat).
#  6  once.run: pgbench, 2 clients, once.run with a new key each time, with 1k, 100k and 1M
#     keys already stored, vs INSERT ... ON CONFLICT DO NOTHING into a plain keys table of the
#     same size. Linear: ms per call at 1M <= 1000x that at 1k.
# The timed runs commit with synchronous_commit = off: a WAL flush costs the same at every
# size and would hide what grows. The fills go through the public API in transactions of
# FILL_CHUNK rows, then VACUUM ANALYZE. pgbench runs add their own rows (sends, sagas, keys)
# to the tables; the sizes are the rows present when each run starts.
#
# Usage: tests/bench/scale.sh   (after ./scripts/build)
#   SCALE_MAX (default 10000000): sizes above it are skipped (a smoke run: SCALE_MAX=100000)
#   SCALE_SECONDS (default 10): each timed run   SCALE_ONLY="1 2 3 4 5 6": some rows only
#   FILL_CHUNK (default 100000), RUN_FILL_CHUNK (default 5000: row 6's fill, see below)
#   ONCE_BENCH_PG=18: PostgreSQL 18 (results/scale-pg18.txt)
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
out=$(bench_results scale)
RELAY="$ONCE_BUILD_DIR/daemon/once-relay"
SCALE_MAX=${SCALE_MAX:-10000000}
SCALE_SECONDS=${SCALE_SECONDS:-10}
SCALE_ONLY=${SCALE_ONLY:-1 2 3 4 5 6}
FILL_CHUNK=${FILL_CHUNK:-100000}
# once.run holds a lock per key until its transaction ends: the shared lock table
# (max_locks_per_transaction x max_connections) bounds how many one transaction may store.
RUN_FILL_CHUNK=${RUN_FILL_CHUNK:-5000}
[ -x "$RELAY" ] || { echo "scale: no $RELAY: run ./scripts/build first" >&2; exit 1; }
work=$(mktemp -d); chmod 755 "$work"
# The relay runs inside a command substitution (a subshell): its pid goes to a file.
cleanup() {
    local p
    p=$(cat "$work/relay.pid" 2>/dev/null || true)
    [ -z "$p" ] || kill "$p" 2>/dev/null || true
    wait 2>/dev/null || true
    once_cluster_stop; rm -rf "$work"
}
trap cleanup EXIT
AS=(); [ "$(id -u)" = 0 ] && AS=(setpriv --reuid=postgres --regid=postgres --init-groups --)
die() { echo "scale: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wants() { [[ " $SCALE_ONLY " == *" $1 "* ]]; }

once_cluster_start shared_preload_libraries=pg_once synchronous_commit=off \
    max_wal_size=4GB checkpoint_timeout=30min
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE bench" >/dev/null
sql() { psql -qXAt -v ON_ERROR_STOP=1 -d bench "$@"; }
sql >/dev/null <<'SQL'
CREATE EXTENSION pg_once;
CREATE SEQUENCE scale_seq;
-- Hand-written baselines: the columns a queue, a keyed queue, a saga and a key store need.
CREATE TABLE plain_queue (id bigserial PRIMARY KEY, topic text NOT NULL, payload jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE plain_keyed (id bigserial PRIMARY KEY, key text NOT NULL, topic text NOT NULL,
    payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX ON plain_keyed (key, id);
CREATE TABLE plain_sagas (saga_id text PRIMARY KEY, name text NOT NULL, step text NOT NULL,
    status text NOT NULL, input jsonb, created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE plain_keys (scope text, key text, request jsonb NOT NULL, response jsonb,
    expires_at timestamptz NOT NULL, PRIMARY KEY (scope, key));
CREATE ROLE scale_producer LOGIN IN ROLE once_producer;
SELECT once.saga_define('scale_saga', '{"steps": [{"name": "a", "action": {"topic": "scale.saga.a"}},
                                                  {"name": "b", "action": {"topic": "scale.saga.b"}}]}');
SQL

echo "# scale: $(date -u '+%F %H:%M UTC'), PostgreSQL $(sql -c 'SHOW server_version_num'), $(nproc) cores shared with other work, load average at start $(cut -d' ' -f1-3 /proc/loadavg), SCALE_MAX=$SCALE_MAX SCALE_SECONDS=$SCALE_SECONDS rows: $SCALE_ONLY" | tee -a "$out"
printf '%-46s | %-8s | %s\n' "curve" "cost" "size: pg_once / baseline = ratio | ... | growth (baseline's) | target" | tee -a "$out"

# ------------------------------------------------------------------ helpers
# fill FROM TO SQL [CHUNK]: runs SQL (with @A@ and @B@ for the bounds of n) over FROM..TO in
# transactions of CHUNK (default FILL_CHUNK) values of n.
fill() {
    local from=$1 to=$2 tpl=$3 chunk=${4:-$FILL_CHUNK} s e q
    [ "$from" -le "$to" ] || return 0
    for ((s = from; s <= to; s += chunk)); do
        e=$((s + chunk - 1)); [ "$e" -le "$to" ] || e=$to
        q=${tpl//@A@/$s}; echo "${q//@B@/$e};"
    done | sql >/dev/null
}
vacuum() { sql -c "VACUUM ANALYZE $*" >/dev/null; }
rows() { sql -c "SELECT count(*) FROM $1"; }
label() {   # 10000 -> 10k
    awk -v n="$1" 'BEGIN { if (n >= 1e6 && n % 1e6 == 0) print n / 1e6 "M"; else if (n >= 1e3 && n % 1e3 == 0) print n / 1e3 "k"; else print n }'
}
# pgb CLIENTS FILE [pgbench options]: the average latency (ms per transaction) of a timed run.
pgb() {
    local c=$1 f=$2 r; shift 2
    r=$(pgbench -n -M prepared -T "$SCALE_SECONDS" -c "$c" -j "$c" -f "$f" "$@" bench 2>&1) ||
        die "pgbench $f failed: $r"
    awk '/^latency average = / { print $4 }' <<<"$r"
}
# drain CLAIM: µs per message of a loop that runs the plpgsql statement CLAIM (setting k to the
# number of messages it took) and commits, for SCALE_SECONDS or until k = 0.
drain() {
    local r
    r=$(sql -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); n bigint := 0; k bigint; BEGIN
        LOOP
            $1
            n := n + k; COMMIT;
            EXIT WHEN k = 0 OR clock_timestamp() - t0 > interval '$SCALE_SECONDS seconds';
        END LOOP;
        RAISE NOTICE 'drained % %', n, extract(epoch FROM clock_timestamp() - t0);
    END \$\$" 2>&1) || die "drain failed: $r"
    awk '/drained/ { if ($(NF - 1) > 0) printf "%.2f\n", 1e6 * $NF / $(NF - 1); else print "n/a" }' <<<"$r"
}
once_drain() { drain "k := once.ack('scale', ARRAY(SELECT id FROM once.claim_locked('scale', 100)));"; }
plain_drain() {   # TABLE: the hand-written claim: delete the first 100 unlocked rows
    drain "WITH c AS (SELECT id FROM $1 ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED),
                d AS (DELETE FROM $1 t USING c WHERE t.id = c.id RETURNING 1)
           SELECT count(*) INTO k FROM d;"
}
# pair MEASURE BASELINE: runs the two functions (each prints one figure) into M and B, in an
# order that alternates from call to call, so that neither always runs on the warmer machine.
pair_n=0
pair() {
    pair_n=$((pair_n + 1))
    if [ $((pair_n % 2)) = 1 ]; then M=$("$1"); B=$("$2"); else B=$("$2"); M=$("$1"); fi
}
# Curves: curve_begin NAME UNIT; curve_add SIZE M B (per size); curve_end LINEAR_NOTE.
curve_begin() { C_NAME=$1; C_UNIT=$2; C_CELLS=(); C_SIZES=(); C_M=(); C_B=(); C_SKIPPED=(); }
curve_add() {
    C_SIZES+=("$1"); C_M+=("$2"); C_B+=("$3")
    C_CELLS+=("$(label "$1"): $2 / $3 = $(awk -v m="$2" -v b="$3" 'BEGIN { if (b > 0) printf "%.2f", m / b; else print "n/a" }')")
}
curve_skip() { C_SKIPPED+=("$(label "$1")"); }
curve_end() {
    local n=${#C_SIZES[@]} growth bgrowth bound verdict cells
    if [ "$n" -ge 2 ]; then
        growth=$(awk -v a="${C_M[0]}" -v z="${C_M[$((n - 1))]}" 'BEGIN { if (a > 0) printf "%.2f", z / a; else print "n/a" }')
        bgrowth=$(awk -v a="${C_B[0]}" -v z="${C_B[$((n - 1))]}" 'BEGIN { if (a > 0) printf "%.2f", z / a; else print "n/a" }')
        bound=$(awk -v a="${C_SIZES[0]}" -v z="${C_SIZES[$((n - 1))]}" 'BEGIN { printf "%g", z / a }')
        verdict=$(awk -v g="$growth" -v b="$bound" 'BEGIN { print (g != "n/a" && g <= b) ? "met" : "NOT MET" }')
        verdict="growth $growth ($bgrowth) | linear <= $bound: $verdict"
    else
        verdict="growth n/a: one size"
    fi
    cells=; [ "$n" = 0 ] || cells=$(printf '%s | ' "${C_CELLS[@]}")
    [ "${#C_SKIPPED[@]}" = 0 ] || cells+="skipped (SCALE_MAX): ${C_SKIPPED[*]} | "
    printf '%-46s | %-8s | %s%s\n' "$C_NAME" "$C_UNIT" "$cells" "$verdict" | tee -a "$out"
}
sizes_upto() { local s; for s in "$@"; do [ "$s" -le "$SCALE_MAX" ] && echo "$s"; done; return 0; }
skip_above() { local s; for s in "$@"; do [ "$s" -le "$SCALE_MAX" ] || curve_skip "$s"; done; return 0; }

# ------------------------------------------------------------------ 1: backlog
if wants 1; then
    cat >"$work/claim_once.sql" <<'SQL'
BEGIN;
SELECT once.ack('scale', ARRAY(SELECT id FROM once.claim_locked('scale', 100)));
ROLLBACK;
SQL
    cat >"$work/claim_plain.sql" <<'SQL'
BEGIN;
WITH c AS (SELECT id FROM plain_queue ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
DELETE FROM plain_queue q USING c WHERE q.id = c.id;
ROLLBACK;
SQL
    claim_once() { pgb 2 "$work/claim_once.sql"; }
    claim_plain() { pgb 2 "$work/claim_plain.sql"; }
    drain_queue() { plain_drain plain_queue; }
    sizes=(10000 100000 1000000 10000000)
    lat=(); drn=()
    sql -c "TRUNCATE once.outbox, plain_queue" >/dev/null
    for size in $(sizes_upto "${sizes[@]}"); do
        echo "row 1: backlog $(label "$size")..." >&2
        fill $(($(rows once.outbox) + 1)) "$size" \
            "SELECT count(once.send('scale.q', jsonb_build_object('n', n, 'item', 'latte'))) FROM generate_series(@A@, @B@) n"
        fill $(($(rows plain_queue) + 1)) "$size" \
            "INSERT INTO plain_queue (topic, payload) SELECT 'scale.q', jsonb_build_object('n', n, 'item', 'latte') FROM generate_series(@A@, @B@) n"
        vacuum once.outbox, plain_queue
        pair claim_once claim_plain
        lat+=("$size $M $B")
        # The rolled-back claims gave every message back.
        [ "$(rows once.outbox)" = "$size" ] || die "row 1: the outbox holds $(rows once.outbox), not $size"
        pair once_drain drain_queue
        drn+=("$size $M $B")
    done
    curve_begin "1a claim_locked(100)+ack latency, 2 clients" "ms/tx"
    for c in "${lat[@]}"; do read -r s m b <<<"$c"; curve_add "$s" "$m" "$b"; done
    skip_above "${sizes[@]}"; curve_end
    curve_begin "1b drain (claim_locked 100, ack, commit)" "us/msg"
    for c in "${drn[@]}"; do read -r s m b <<<"$c"; curve_add "$s" "$m" "$b"; done
    skip_above "${sizes[@]}"; curve_end
    sql -c "TRUNCATE once.outbox, plain_queue" >/dev/null
fi

# ------------------------------------------------------------------ 2: distinct keys
if wants 2; then
    cat >"$work/send_keyed.sql" <<'SQL'
\set k random(1, :keys)
SELECT once.send('scale.k', '{"item": "latte"}', 'k' || :k);
SQL
    cat >"$work/insert_keyed.sql" <<'SQL'
\set k random(1, :keys)
INSERT INTO plain_keyed (key, topic, payload) VALUES ('k' || :k, 'scale.k', '{"item": "latte"}');
SQL
    send_keyed() { pgb 2 "$work/send_keyed.sql" -D keys="$keys"; }
    insert_keyed() { pgb 2 "$work/insert_keyed.sql" -D keys="$keys"; }
    drain_keyed() { plain_drain plain_keyed; }
    sizes=(1 1000 100000 1000000)
    snd=(); drn=()
    for keys in $(sizes_upto "${sizes[@]}"); do
        echo "row 2: $(label "$keys") keys..." >&2
        sql -c "TRUNCATE once.outbox, plain_keyed" >/dev/null
        fill 1 "$keys" "SELECT count(once.send('scale.k', jsonb_build_object('n', n), 'k' || n)) FROM generate_series(@A@, @B@) n"
        fill 1 "$keys" "INSERT INTO plain_keyed (key, topic, payload) SELECT 'k' || n, 'scale.k', jsonb_build_object('n', n) FROM generate_series(@A@, @B@) n"
        vacuum once.outbox, plain_keyed
        pair send_keyed insert_keyed
        snd+=("$keys $M $B")
        vacuum once.outbox, plain_keyed
        pair once_drain drain_keyed
        drn+=("$keys $M $B")
    done
    curve_begin "2a once.send with a key, 2 clients, by keys" "ms/tx"
    for c in "${snd[@]}"; do read -r s m b <<<"$c"; curve_add "$s" "$m" "$b"; done
    skip_above "${sizes[@]}"; curve_end
    curve_begin "2b drain of the keyed backlog, by keys" "us/msg"
    for c in "${drn[@]}"; do read -r s m b <<<"$c"; curve_add "$s" "$m" "$b"; done
    skip_above "${sizes[@]}"; curve_end
    sql -c "TRUNCATE once.outbox, plain_keyed" >/dev/null
fi

# ------------------------------------------------------------------ 3: publish grants
if wants 3; then
    cat >"$work/send_topics.sql" <<'SQL'
\set t random(1, :topics)
SELECT once.send('scale.t' || :t, '{"item": "latte"}');
SQL
    grants() {   # N: scale_producer may publish on scale.t1 .. scale.tN, and on nothing else
        sql -c "SELECT once.revoke_publish('scale_producer')" \
            -c "SELECT count(once.grant_publish('scale_producer', 'scale.t' || n)) FROM generate_series(1, $1) n" \
            -c "TRUNCATE once.outbox" >/dev/null
        vacuum once.publish_grants, once.outbox
    }
    granted_run() { grants "$1"; PGUSER=scale_producer pgb 2 "$work/send_topics.sql" -D topics="$1"; }
    granted_many() { granted_run "$topics"; }
    granted_one() { granted_run 1; }
    sizes=(1 100 10000)
    curve_begin "3 once.send as a producer, by publish grants" "ms/tx"
    for topics in $(sizes_upto "${sizes[@]}"); do
        echo "row 3: $(label "$topics") grants..." >&2
        pair granted_many granted_one
        curve_add "$topics" "$M" "$B"
    done
    # A producer without a grant for the topic is refused: the grants were in force.
    if PGUSER=scale_producer sql -c "SELECT once.send('scale.elsewhere', '{}')" >/dev/null 2>&1; then
        die "row 3: a send without a grant was accepted"
    fi
    skip_above "${sizes[@]}"; curve_end
    sql -c "SELECT once.revoke_publish('scale_producer')" -c "TRUNCATE once.outbox" >/dev/null
fi

# ------------------------------------------------------------------ 4: sagas
if wants 4; then
    cat >"$work/saga_once.sql" <<'SQL'
SELECT nextval('scale_seq') AS s \gset
SELECT once.saga_start('scale_saga', 'run-' || :s, '{"item": "latte"}');
SELECT once.saga_reply('run-' || :s, 'a', 'succeeded');
SQL
    cat >"$work/saga_plain.sql" <<'SQL'
SELECT nextval('scale_seq') AS s \gset
INSERT INTO plain_sagas (saga_id, name, step, status, input) VALUES ('run-' || :s, 'scale_saga', 'a', 'running', '{"item": "latte"}');
UPDATE plain_sagas SET step = 'b', updated_at = now() WHERE saga_id = 'run-' || :s;
SQL
    saga_once() { pgb 2 "$work/saga_once.sql"; }
    saga_plain() { pgb 2 "$work/saga_plain.sql"; }
    sizes=(1000 100000 1000000)
    curve_begin "4 saga_start + saga_reply, 2 clients, by sagas" "ms/tx"
    for size in $(sizes_upto "${sizes[@]}"); do
        echo "row 4: $(label "$size") sagas..." >&2
        have=$(rows once.saga_instances)
        # The started sagas' first commands are nobody's work here: the outbox is emptied.
        fill $((have + 1)) "$size" "SELECT count(once.saga_start('scale_saga', 'pre-' || n, '{\"item\": \"latte\"}')) FROM generate_series(@A@, @B@) n"
        have=$(rows plain_sagas)
        fill $((have + 1)) "$size" "INSERT INTO plain_sagas (saga_id, name, step, status, input) SELECT 'pre-' || n, 'scale_saga', 'a', 'running', '{\"item\": \"latte\"}' FROM generate_series(@A@, @B@) n"
        sql -c "TRUNCATE once.outbox" >/dev/null
        vacuum once.saga_instances, once.saga_transitions, once.saga_replies, plain_sagas
        pair saga_once saga_plain
        curve_add "$size" "$M" "$B"
    done
    [ "$(sql -c "SELECT count(*) FROM once.sagas WHERE saga_id LIKE 'run-%' AND step = 'b'")" -gt 0 ] ||
        die "row 4: no timed saga reached its second step"
    skip_above "${sizes[@]}"; curve_end
    sql -c "TRUNCATE once.outbox, plain_sagas" >/dev/null
fi

# ------------------------------------------------------------------ 5: relay memory
if wants 5; then
    SRC="host=$PGHOST port=$PGPORT user=postgres dbname=bench"
    acked() { { curl -sf "$1" 2>/dev/null || true; } | awk '$1 == "once_relay_acked_total" { print $2 }'; }
    relay_peak() {   # BACKLOG: "peak-RSS-MB msgs/s" of a relay draining the outbox to /dev/null
        local n=$1 port metrics t0 a deadline hwm
        port=$(free_port); metrics="http://127.0.0.1:$port/metrics"
        t0=$(date +%s.%N)
        "${AS[@]}" "$RELAY" --db "$SRC" --sink stdout: --name scale --metrics "127.0.0.1:$port" \
            --maintenance off --log-level warn >/dev/null 2>>"$work/relay.log" &
        RELAY_PID=$!; echo "$RELAY_PID" >"$work/relay.pid"
        deadline=$((SECONDS + 120 + n / 1000))
        while :; do
            a=$(acked "$metrics")
            [ "${a:-0}" -ge "$n" ] 2>/dev/null && break
            kill -0 "$RELAY_PID" 2>/dev/null || die "row 5: the relay exited: $(tail -5 "$work/relay.log")"
            [ $SECONDS -lt $deadline ] || die "row 5: the relay acknowledged ${a:-0} of $n in time"
            sleep 0.1
        done
        hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$RELAY_PID/status")
        echo "$(awk -v k="$hwm" 'BEGIN { printf "%.1f", k / 1024 }') $(awk -v n="$n" -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", n / (b - a) }')"
        kill -TERM "$RELAY_PID" 2>/dev/null || true; wait "$RELAY_PID" 2>/dev/null || true; rm -f "$work/relay.pid"
    }
    relay_fill() {
        sql -c "TRUNCATE once.outbox" >/dev/null
        fill 1 "$1" "SELECT count(once.send('scale.r', jsonb_build_object('n', n, 'item', 'latte'))) FROM generate_series(@A@, @B@) n"
        vacuum once.outbox
    }
    sizes=(100000 1000000 10000000)
    base=; rates=()
    curve_begin "5 relay peak RSS draining to stdout, by backlog" "MB"
    for size in $(sizes_upto "${sizes[@]}"); do
        echo "row 5: relay draining $(label "$size")..." >&2
        relay_fill "$size"
        read -r mb rate <<<"$(relay_peak "$size")"
        [ -n "$base" ] || base=$mb
        curve_add "$size" "$mb" "$base"
        rates+=("$(label "$size") $rate msgs/s")
    done
    skip_above "${sizes[@]}"; curve_end
    if [ "${#rates[@]}" -gt 0 ]; then
        joined=$(printf '%s; ' "${rates[@]}")
        echo "  5 relay drain rate (context): ${joined%; }" | tee -a "$out"
    fi
    sql -c "TRUNCATE once.outbox" >/dev/null
fi

# ------------------------------------------------------------------ 6: once.run
if wants 6; then
    cat >"$work/run_once.sql" <<'SQL'
SELECT nextval('scale_seq') AS s \gset
SELECT * FROM once.run('scale', 'run-' || :s, '{"item": "latte"}', 'SELECT $1');
SQL
    cat >"$work/run_plain.sql" <<'SQL'
SELECT nextval('scale_seq') AS s \gset
INSERT INTO plain_keys VALUES ('scale', 'run-' || :s, '{"item": "latte"}', '{"item": "latte"}', now() + interval '24 hours') ON CONFLICT DO NOTHING;
SQL
    run_once() { pgb 2 "$work/run_once.sql"; }
    run_plain() { pgb 2 "$work/run_plain.sql"; }
    sizes=(1000 100000 1000000)
    curve_begin "6 once.run new key, 2 clients, by stored keys" "ms/tx"
    for size in $(sizes_upto "${sizes[@]}"); do
        echo "row 6: $(label "$size") keys..." >&2
        fill $(($(rows once.keys) + 1)) "$size" \
            "SELECT count(*) FROM generate_series(@A@, @B@) n, once.run('scale', 'pre-' || n, '{\"item\": \"latte\"}', 'SELECT \$1') r" \
            "$RUN_FILL_CHUNK"
        fill $(($(rows plain_keys) + 1)) "$size" \
            "INSERT INTO plain_keys SELECT 'scale', 'pre-' || n, '{\"item\": \"latte\"}', '{\"item\": \"latte\"}', now() + interval '24 hours' FROM generate_series(@A@, @B@) n"
        vacuum once.keys, plain_keys
        pair run_once run_plain
        curve_add "$size" "$M" "$B"
    done
    skip_above "${sizes[@]}"; curve_end
fi
echo "# load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
