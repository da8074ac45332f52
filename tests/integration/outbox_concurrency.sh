#!/usr/bin/env bash
# Outbox under concurrency: 4 producers send messages over 40 keys (and some keyless ones)
# while 3 relays claim and ack in separate transactions. Afterwards every message was claimed
# exactly once (no lease expired), every ack counted, and each key's messages were claimed
# in the order their transactions committed. Runs with pg_once preloaded, so the coalescing notifier is exercised too.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
once_cluster_start fsync=off shared_preload_libraries=pg_once track_commit_timestamp=on
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-outbox-conc.XXXXXX")
claimers=
cleanup() {
    [ -n "$claimers" ] && kill "$claimers" 2>/dev/null || true
    once_cluster_stop
    rm -rf "$work"
}
trap cleanup EXIT

per_producer=${OUTBOX_CONC_MESSAGES:-1000}
total=$((4 * per_producer))

psql -qX -v ON_ERROR_STOP=1 -d postgres <<'SQL'
CREATE EXTENSION pg_once;
-- Ground truth: each producer transaction records what it sent; a key's order is the order in
-- which the producers' transactions committed (commit timestamps; seq breaks no ties: one
-- message per transaction).
CREATE TABLE sent (id uuid NOT NULL UNIQUE, key text, seq bigserial PRIMARY KEY,
                   xid xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id());
-- What the relays got, in claim order.
CREATE TABLE claims (seq bigserial PRIMARY KEY, id uuid NOT NULL, key text, relay int NOT NULL,
                     attempt int NOT NULL, acked boolean NOT NULL DEFAULT false);
CREATE TABLE acks (relay int NOT NULL, n int NOT NULL);
SQL

cat >"$work/producer.sql" <<'SQL'
\set k random(0, 43)
INSERT INTO sent (id, key)
SELECT once.send('conc.test', jsonb_build_object('k', :k), k.key), k.key
  FROM (SELECT CASE WHEN :k >= 40 THEN NULL ELSE 'key-' || :k END AS key) k;
SQL
cat >"$work/claimer.sql" <<'SQL'
INSERT INTO claims (id, key, relay, attempt)
SELECT id, key, :client_id, attempt FROM once.claim('relay-' || :client_id, 25, '5 minutes');
INSERT INTO acks
SELECT :client_id, once.ack('relay-' || :client_id, ids)
  FROM (SELECT array_agg(id) AS ids FROM claims WHERE relay = :client_id AND NOT acked) s
 WHERE ids IS NOT NULL;
UPDATE claims SET acked = true WHERE relay = :client_id AND NOT acked;
SQL

pgbench -n -c 3 -j 3 -T 600 -f "$work/claimer.sql" postgres >"$work/claimers.log" 2>&1 &
claimers=$!
pgbench -n -c 4 -j 4 -t "$per_producer" -f "$work/producer.sql" postgres >"$work/producers.log" 2>&1 || {
    cat "$work/producers.log" >&2; exit 1; }

drained() {
    [ "$(psql -qXAt -d postgres -c "SELECT (SELECT count(*) FROM once.outbox) = 0
                                          AND (SELECT count(*) FROM claims WHERE NOT acked) = 0")" = t ]
}
once_wait_for "relays to drain the outbox" 120 drained || {
    psql -X -d postgres -c "SELECT count(*), min(attempt), max(attempt), count(relay), count(pos), min(visible_at) < now() AS due FROM once.outbox" \
        -c "SELECT relay, count(*), sum(n) FROM acks GROUP BY relay" -c "SELECT count(*) FROM claims WHERE NOT acked" \
        -c "SELECT count(*) AS fresh_backend_claims FROM once.claim('debug', 100)" >&2
    tail -5 "$work/claimers.log" >&2
    exit 1
}
kill "$claimers" 2>/dev/null || true
wait "$claimers" 2>/dev/null || true
claimers=

fail=0
check() {  # check DESCRIPTION EXPECTED SQL
    local got
    got=$(psql -qXAt -d postgres -c "$3")
    if [ "$got" = "$2" ]; then echo "ok - $1"; else echo "not ok - $1: expected $2, got $got"; fail=1; fi
}
check "all $total messages were sent" "$total" "SELECT count(*) FROM sent"
check "every message was claimed" "0" "SELECT count(*) FROM sent s WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE c.id = s.id)"
check "no message was claimed twice" "0" "SELECT count(*) FROM (SELECT id FROM claims GROUP BY id HAVING count(*) > 1) d"
check "every claim was a first attempt" "0" "SELECT count(*) FROM claims WHERE attempt <> 1"
check "acks counted every claimed message" "$total" "SELECT sum(n) FROM acks"
check "each key's messages were claimed in commit order" "0" "
    SELECT count(*) FROM (
        SELECT c.seq AS claim_seq, lag(c.seq) OVER (PARTITION BY s.key
                   ORDER BY pg_catalog.pg_xact_commit_timestamp(s.xid::text::xid), s.seq) AS previous
          FROM sent s JOIN claims c USING (id) WHERE s.key IS NOT NULL) o
     WHERE previous > claim_seq"
check "keys were used by several producers" "t" "SELECT count(DISTINCT key) >= 40 FROM sent"
check "the notifier sent wake-ups, fewer than one per producer transaction" "t" \
    "SELECT preloaded AND notifies > 0 AND notifies < $total FROM once.outbox_notifier_status()"
psql -qXAt -d postgres -c "SELECT 'notifier: ' || notifies || ' NOTIFYs for $total producer transactions' FROM once.outbox_notifier_status()"

# The notifier of a database exits when idle, so DROP DATABASE is not blocked by it.
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE notifier_drop" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d notifier_drop -c "CREATE EXTENSION pg_once" -c "SELECT once.send('t', '{}')" >/dev/null
notifier_running() { [ "$(psql -qXAt -d notifier_drop -c "SELECT worker_pid IS NOT NULL FROM once.outbox_notifier_status()")" = t ]; }
notifier_gone() { [ "$(psql -qXAt -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE datname = 'notifier_drop'")" = 0 ]; }
if once_wait_for "the notifier of notifier_drop to start" 10 notifier_running \
   && once_wait_for "the idle notifier to exit" 15 notifier_gone \
   && psql -qX -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE notifier_drop" >/dev/null; then
    echo "ok - an idle notifier exits and DROP DATABASE succeeds"
else
    echo "not ok - an idle notifier exits and DROP DATABASE succeeds"; fail=1
fi
exit $fail
