#!/usr/bin/env bash
# 20 sessions call once.run with the same key at the same moment. A barrier (an exclusive
# advisory lock that every session waits for in shared mode) lines them up; the test waits
# until all 20 are blocked on it, then releases them together. The side effect must happen
# exactly once and every caller must get the same response.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
sessions=20

once_cluster_start fsync=off
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-race.XXXXXX")
exec 3> >(psql -qX -d postgres >/dev/null)   # the barrier holder, an open session
trap 'exec 3>&-; once_cluster_stop; rm -rf "$work"' EXIT

psql -qX -v ON_ERROR_STOP=1 -d postgres <<'SQL'
CREATE EXTENSION pg_once;
CREATE TABLE charges (id serial PRIMARY KEY, amount int, at timestamptz DEFAULT clock_timestamp());
SQL
# barrier_locks GRANTED COUNT: true when COUNT locks on the barrier have granted = GRANTED.
barrier_locks() {
    test "$(psql -qtAX -d postgres -c "SELECT count(*) FROM pg_locks
             WHERE locktype = 'advisory' AND objid = 4242 AND granted = $1")" = "$2"
}
echo "SELECT pg_advisory_lock(4242);" >&3
once_wait_for "barrier held" 30 barrier_locks true 1

cat >"$work/call.sql" <<'SQL'
SELECT pg_advisory_lock_shared(4242) IS NULL AS waited;
SELECT response FROM once.run('pay', 'order-42', '{"amount": 500}',
    $$INSERT INTO charges (amount) VALUES (($1->>'amount')::int) RETURNING jsonb_build_object('charge', id)$$);
SQL
pids=()
for i in $(seq 1 "$sessions"); do
    psql -qtAX -v ON_ERROR_STOP=1 -d postgres -f "$work/call.sql" >"$work/out.$i" 2>"$work/err.$i" </dev/null &
    pids+=($!)
done
once_wait_for "$sessions sessions at the barrier" 60 barrier_locks false "$sessions"
echo "SELECT pg_advisory_unlock(4242);" >&3   # go

failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
[ "$failed" -eq 0 ] || { cat "$work"/err.*; echo "FAIL: $failed sessions failed"; exit 1; }

charges=$(psql -qtAX -d postgres -c "SELECT count(*) FROM charges")
distinct=$(cat "$work"/out.* | grep charge | sort -u)
echo "sessions=$sessions charges=$charges responses=$(echo "$distinct" | wc -l) response=$distinct"
[ "$charges" = 1 ] || { echo "FAIL: the charge happened $charges times"; exit 1; }
[ "$(echo "$distinct" | wc -l)" = 1 ] || { echo "FAIL: callers got different responses"; exit 1; }
[ "$(cat "$work"/out.* | grep -c charge)" = "$sessions" ] || { echo "FAIL: not every caller got the response"; exit 1; }
echo "1 passed, 0 failed"
