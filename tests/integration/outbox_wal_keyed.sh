#!/usr/bin/env bash
# Keyed messages on the WAL transport, the producer's side: with pg_once
# preloaded and once.transport = 'wal', a keyed once.send / send_many emits its message at the
# transaction's pre-commit step, format version 2 with key_owner and key_seq, unless the table
# holds a message of the key ("a key has one home at a time"); key_seq orders commits across
# stream and table (the greatest issued per lock bucket in shared memory); a relay's keyed
# write-back is fenced until once.wal_release_fences. The sessions below commit before the
# checks (decoding shows committed transactions only); outbox_wal_keyed.sql checks them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
once_cluster_start fsync=off wal_level=logical max_prepared_transactions=2 shared_preload_libraries=pg_once
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-wal-keyed.XXXXXX")
chmod 755 "$work"
trap 'exec 3>&- 2>/dev/null || true; once_cluster_stop; rm -rf "$work"' EXIT
sql() { psql -qtAX -v ON_ERROR_STOP=1 -d wk "$@"; }

psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE wk" >/dev/null
sql -c "CREATE EXTENSION pgtap" -c "CREATE EXTENSION pg_once" -c "CREATE PUBLICATION wk_pub" \
    -c "SELECT pg_create_logical_replication_slot('wk_slot', 'pgoutput')" >/dev/null
sql -c "ALTER DATABASE wk SET once.transport = 'wal'" >/dev/null
sql -c "CREATE TABLE ids (name text PRIMARY KEY, id uuid)" >/dev/null
record() { sql -c "INSERT INTO ids VALUES ('$1', ($2))" >/dev/null; }

record first "SELECT once.send('wk.first', '{\"n\": 1}', key => 'k1')"
sql -c "BEGIN" -c "INSERT INTO ids VALUES ('two_a', once.send('wk.two', '{\"n\": 1}', key => 'k2'))" \
    -c "INSERT INTO ids VALUES ('two_b', once.send('wk.two', '{\"n\": 2}', key => 'k2'))" -c "COMMIT" >/dev/null
# The table holds a message of k3 (delayed: the stream has no notion of later): the next one of
# k3 goes to the table too.
record delayed "SELECT once.send('wk.delayed', '{}', key => 'k3', deliver_at => now() + interval '1 hour')"
record after_delayed "SELECT once.send('wk.after', '{}', key => 'k3')"
# A message of k10 sent before 0.3 (owner 0, as the upgrade leaves them) goes before the role's.
sql -c "INSERT INTO once.outbox (id, topic, key, key_seq, payload, visible_at, key_owner)
        VALUES (gen_random_uuid(), 'wk.old', 'k10', gen_random_uuid(), '{}', now(), 0)" >/dev/null
record after_old "SELECT once.send('wk.after_old', '{}', key => 'k10')"
sql -c "BEGIN" -c "SELECT once.send('wk.rolled_back', '{}', key => 'k4')" -c "ROLLBACK" >/dev/null
sql -c "BEGIN" -c "SAVEPOINT s" -c "SELECT once.send('wk.sub_aborted', '{}', key => 'k5')" -c "ROLLBACK TO s" \
    -c "INSERT INTO ids VALUES ('sub_kept', once.send('wk.sub_kept', '{}', key => 'k5'))" -c "COMMIT" >/dev/null
sql -c "BEGIN" -c "INSERT INTO ids VALUES ('prepared', once.send('wk.prepared', '{}', key => 'k6'))" \
    -c "PREPARE TRANSACTION 'wk_p'" >/dev/null
sql -c "COMMIT PREPARED 'wk_p'" >/dev/null
sql -c "INSERT INTO ids SELECT 'many_' || ord, id FROM once.send_many('wk.many', ARRAY['{\"m\": 1}', '{\"m\": 2}', '{\"m\": 3}']::jsonb[],
          ARRAY['k8', NULL, 'k8']) WITH ORDINALITY AS s(id, ord)" >/dev/null

# Two sessions, one key: B sends first (its provisional key_seq is older) and commits last; A
# sends and commits in between. Commit order is A, B: B's key_seq must come after A's although
# A's message never was a row (the bucket's greatest key_seq, in shared memory).
mkfifo "$work/b.in"
psql -qtAX -v ON_ERROR_STOP=1 -d wk <"$work/b.in" >"$work/b.out" 2>&1 &
b_pid=$!
exec 3>"$work/b.in"
echo "BEGIN; INSERT INTO ids VALUES ('k7_b', once.send('wk.k7', '{\"s\": \"b\"}', key => 'k7')); SELECT 'b sent';" >&3
once_wait_for "session B sent" 30 grep -q "b sent" "$work/b.out"
record k7_a "SELECT once.send('wk.k7', '{\"s\": \"a\"}', key => 'k7')"
echo "COMMIT;" >&3
exec 3>&-
wait "$b_pid"

if pg_prove -d wk --failures "$here/outbox_wal_keyed.sql"; then
    echo "1 passed, 0 failed"
else
    cat "$work/b.out"
    exit 1
fi
