#!/usr/bin/env bash
# Producers that send keys in different orders: four sessions each send 3,000 keyed
# messages over 40 keys, 50 per transaction, while two more sessions send_many the same 20
# keys in opposite orders (and once.send them in the other order after). Before per-key order
# was decided at commit, three of the four failed with "deadlock detected". Now every session
# finishes without an error, and a relay draining the outbox afterwards gets each key's
# messages in the order their transactions committed (track_commit_timestamp), send order
# within a transaction.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
once_cluster_start fsync=off track_commit_timestamp=on max_prepared_transactions=2 shared_preload_libraries=pg_once
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-producer-order.XXXXXX")
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    once_cluster_stop
    rm -rf "$work"
}
trap cleanup EXIT

per_session=${OUTBOX_ORDER_MESSAGES:-3000}
many_rounds=${OUTBOX_ORDER_MANY_ROUNDS:-150}

psql -qX -v ON_ERROR_STOP=1 -d postgres <<'SQL'
CREATE EXTENSION pg_once;
-- What the relay got, in claim order.
CREATE TABLE got (seq bigserial PRIMARY KEY, id uuid NOT NULL, key text, payload jsonb NOT NULL);
SQL

started=$SECONDS
# The issue's workload; x is the producing transaction (for its commit timestamp).
for p in 1 2 3 4; do
    psql -qX -v ON_ERROR_STOP=1 -d postgres >"$work/send-$p.log" 2>&1 <<SQL &
DO \$\$ BEGIN FOR i IN 1..$per_session LOOP
  PERFORM once.send('t.load', jsonb_build_object('p', $p, 'i', i, 'x', pg_catalog.txid_current()),
                    key => 'k' || ((i*7+1) % 40));
  IF i % 50 = 0 THEN COMMIT; END IF;
END LOOP; END \$\$;
SQL
    pids+=($!)
done
# send_many with the keys in opposite orders, then once.send of the same keys the other way.
for dir in asc desc; do
    psql -qX -v ON_ERROR_STOP=1 -d postgres >"$work/many-$dir.log" 2>&1 <<SQL &
DO \$\$
DECLARE
    ks text[];
BEGIN
  FOR r IN 1..$many_rounds LOOP
    ks := ARRAY(SELECT 'm' || g FROM generate_series(1, 20) g ORDER BY CASE WHEN '$dir' = 'asc' THEN g ELSE -g END);
    PERFORM once.send_many('t.many',
        ARRAY(SELECT jsonb_build_object('d', '$dir', 'r', r, 'i', o, 'x', pg_catalog.txid_current())
                FROM generate_series(1, 20) o),
        ks);
    FOR o IN REVERSE 20..1 LOOP
      PERFORM once.send('t.many', jsonb_build_object('d', '$dir', 'r', r, 'i', 20 + (21 - o), 'x', pg_catalog.txid_current()),
                        key => ks[o]);
    END LOOP;
    COMMIT;
  END LOOP;
END \$\$;
SQL
    pids+=($!)
done

fail=0
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then fail=1; fi
done
pids=()
for log in "$work"/*.log; do
    if [ -s "$log" ]; then echo "not ok - $(basename "$log" .log) reported:"; cat "$log"; fail=1; fi
done
[ "$fail" = 0 ] && echo "ok - 6 producer sessions with keys in different orders finished without an error"
echo "# producers took $((SECONDS - started)) s"

psql -qX -v ON_ERROR_STOP=1 -d postgres <<'SQL'
DO $$
DECLARE
    ids uuid[];
BEGIN
  LOOP
    WITH c AS (SELECT * FROM once.claim('relay', 100)),
         g AS (INSERT INTO got (id, key, payload) SELECT c.id, c.key, c.payload FROM c RETURNING id)
    SELECT array_agg(id) INTO ids FROM g;
    EXIT WHEN ids IS NULL;
    PERFORM once.ack('relay', ids);
    COMMIT;
  END LOOP;
END $$;
SQL
echo "# producers and drain took $((SECONDS - started)) s"

check() {  # check DESCRIPTION EXPECTED SQL
    local got
    got=$(psql -qXAt -F ' ' -d postgres -c "$3")
    if [ "$got" = "$2" ]; then echo "ok - $1"; else echo "not ok - $1: expected $2, got $got"; fail=1; fi
}
total=$((4 * per_session + 2 * many_rounds * 40))
check "the relay got all $total messages, each once" "$total $total 0" \
    "SELECT count(*), count(DISTINCT id), (SELECT count(*) FROM once.outbox) FROM got"
# Per key, in claim order: a message of a transaction that committed earlier never comes
# after one of a later commit, and within a transaction, send order (i) holds.
check "each key's messages came in commit order, send order within a transaction" "0" "
    WITH g AS (
        SELECT seq, key, (payload->>'x')::bigint AS x, (payload->>'i')::int AS i,
               pg_catalog.pg_xact_commit_timestamp((((payload->>'x')::bigint % 4294967296)::text)::xid) AS ts
          FROM got),
    w AS (
        SELECT g.*, lag(x) OVER k AS px, lag(i) OVER k AS pi, lag(ts) OVER k AS pts
          FROM g WINDOW k AS (PARTITION BY key ORDER BY seq))
    SELECT count(*) FROM w WHERE pts > ts OR (px = x AND pi > i) OR ts IS NULL"
check "a transaction's messages of a key are not interleaved with another's" "0" "
    WITH w AS (
        SELECT key, (payload->>'x')::bigint AS x,
               lag((payload->>'x')::bigint) OVER (PARTITION BY key ORDER BY seq) AS px
          FROM got),
    runs AS (SELECT key, x, count(*) FILTER (WHERE px IS DISTINCT FROM x) AS starts FROM w GROUP BY key, x)
    SELECT count(*) FROM runs WHERE starts <> 1"
check "producers overtook each other (commit order differed from send order)" "t" "
    SELECT count(*) > 0 FROM (
        SELECT key, (payload->>'x')::bigint AS x, seq,
               lag((payload->>'x')::bigint) OVER (PARTITION BY key ORDER BY seq) AS px
          FROM got WHERE payload ? 'p') s WHERE px IS NOT NULL AND px > x"

# Two-phase commit (pg_once preloaded: no NOTIFY in the transaction) runs the same pre-commit step: the prepared transaction keeps the key's
# lock, so a producer of the key committing meanwhile (lock_timeout: it must wait) comes after.
psql -qX -v ON_ERROR_STOP=1 -d postgres >/dev/null <<'SQL'
BEGIN;
SELECT once.send('t.2pc', '{"n": "prepared"}', key => 'q');
PREPARE TRANSACTION 'outbox_2pc';
SQL
check "the prepared transaction holds the key's lock, a tag SQL cannot take (objsubid 28526)" "1" "
    SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 1868722040
       AND objsubid = 28526 AND pid IS NULL"
later=$(psql -qX -v ON_ERROR_STOP=1 -d postgres -c "SET lock_timeout = '200ms'" \
            -c "SELECT once.send('t.2pc', '{\"n\": \"later\"}', key => 'q')" 2>&1 >/dev/null || true)
if [[ "$later" == *"lock timeout"* ]]; then
    echo "ok - a producer of the key waits for the prepared transaction (its commit timed out)"
else
    echo "not ok - a producer of the key waits for the prepared transaction"; fail=1
fi
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "COMMIT PREPARED 'outbox_2pc'" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "SELECT once.send('t.2pc', '{\"n\": \"after\"}', key => 'q')" >/dev/null
check "after COMMIT PREPARED the prepared message comes first" "prepared" \
    "SELECT string_agg(payload->>'n', ',') FROM once.claim('r2pc', 10, topics => '{t.2pc}')"
exit $fail
