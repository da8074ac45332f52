#!/usr/bin/env bash
# Transactions with many distinct keys. 0.2 took one lock per distinct
# key of every send and every ack at commit: one producer committing 50,000 keys, or two
# relays acknowledging 10,000-key batches at once, filled the server's shared lock table and
# failed with "out of shared memory" (other sessions of the cluster too). Keys are now locked
# by bucket: a transaction holds at most 256 such locks, counted here on a prepared
# transaction (which keeps its commit-time locks until COMMIT PREPARED).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
# max_connections=100 (the server's default) gives the default shared lock table.
once_cluster_start fsync=off max_connections=100 max_prepared_transactions=2 shared_preload_libraries=pg_once
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-many-keys.XXXXXX")
trap 'once_cluster_stop; rm -rf "$work"' EXIT
fails=0
check() { if "${@:2}"; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); fi; }
sql() { psql -qtAX -v ON_ERROR_STOP=1 -d postgres "$@"; }

sql -c "CREATE EXTENSION pg_once" -c "SELECT once.topic_policy('many', max_attempts => 3)" >/dev/null

send_50k_keys() {  # one transaction, 50,000 messages with 50,000 distinct keys
    # (send_many takes 10,000 payloads a call)
    local calls=() i
    for i in 0 1 2 3 4; do
        calls+=(-c "SELECT count(*) FROM once.send_many('many',
                      ARRAY(SELECT jsonb_build_object('n', g) FROM generate_series($i * 10000 + 1, ($i + 1) * 10000) g),
                      ARRAY(SELECT 'key-' || g FROM generate_series($i * 10000 + 1, ($i + 1) * 10000) g))")
    done
    sql -c "BEGIN" "${calls[@]}" -c "COMMIT" >/dev/null 2>"$work/send.err" &&
        sql -c "SELECT count(*) FROM once.outbox WHERE topic = 'many'"
}
check "one transaction sends 50,000 messages with 50,000 keys" test "$(send_50k_keys)" = 50000
grep -q "out of shared memory" "$work/send.err" && cat "$work/send.err"

# Two relays acknowledge 10,000-key batches side by side (20,000 messages of distinct keys,
# sent in batches of 5,000, which 0.2's lock table also held).
sql -c "DELETE FROM once.outbox" >/dev/null
for batch in 1 2 3 4; do
    sql -c "SELECT count(*) FROM once.send_many('many', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 5000)),
              ARRAY(SELECT 'relay-$batch-' || g FROM generate_series(1, 5000) g))" >/dev/null
done
relay_batch() {
    sql -c "BEGIN" -c "SELECT count(*) FROM once.ack('$1', ARRAY(SELECT id FROM once.claim_locked('$1', 10000, topics => '{many}')))" \
        -c "COMMIT" >"$work/$1.out" 2>&1
}
relay_batch r1 & p1=$!
relay_batch r2 & p2=$!
s1=0; s2=0; wait "$p1" || s1=$?; wait "$p2" || s2=$?
check "two relays acknowledge 10,000 keys each at once" test "$s1$s2" = 00
[ "$s1$s2" = 00 ] || cat "$work/r1.out" "$work/r2.out"
check "all 20,000 messages were acknowledged" test "$(sql -c "SELECT count(*) FROM once.outbox")" = 0

# What one transaction holds: prepare it, then count its pg_once key locks.
sql -c "BEGIN" -c "SELECT count(*) FROM once.send_many('many',
          ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 5000)),
          ARRAY(SELECT 'prepared-' || g FROM generate_series(1, 5000) g))" \
    -c "PREPARE TRANSACTION 'many_keys'" >/dev/null
held=$(sql -c "SELECT count(*) FROM pg_locks
                WHERE locktype = 'advisory' AND objsubid = 28526 AND classid = 1868722040
                  AND pid IS NULL")   # a prepared transaction's locks have no process
echo "# key locks held by a prepared transaction of 5,000 keys: $held"
check "a transaction of 5,000 keys holds at most 256 key locks" test "$held" -le 256
sql -c "COMMIT PREPARED 'many_keys'" >/dev/null
check "... and commits" test "$(sql -c "SELECT count(*) FROM once.outbox WHERE key LIKE 'prepared-%'")" = 5000

[ "$fails" -eq 0 ] || { echo "outbox_many_keys: $fails checks failed"; exit 1; }
echo "outbox_many_keys: all checks passed"
