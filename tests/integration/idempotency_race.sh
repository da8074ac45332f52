#!/usr/bin/env bash
# 20 sessions call once.run with the same key at the same moment. A barrier (an exclusive
# advisory lock that every session waits for in shared mode) lines them up; the test waits
# until all 20 are blocked on it, then releases them together. The side effect must happen
# exactly once and every caller must get the same response.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
source "$here/../lib/barrier.sh"
sessions=20

once_cluster_start fsync=off
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-race.XXXXXX")
once_barrier_open
trap 'exec 3>&-; once_cluster_stop; rm -rf "$work"' EXIT

psql -qX -v ON_ERROR_STOP=1 -d postgres <<'SQL'
CREATE EXTENSION pg_once;
CREATE TABLE charges (id serial PRIMARY KEY, amount int, at timestamptz DEFAULT clock_timestamp());
SQL
once_barrier_hold

{
    echo "$once_barrier_pass"
    cat <<'SQL'
SELECT response FROM once.run('pay', 'order-42', '{"amount": 500}',
    $$INSERT INTO charges (amount) VALUES (($1->>'amount')::int) RETURNING jsonb_build_object('charge', id)$$);
SQL
} >"$work/call.sql"
pids=()
for i in $(seq 1 "$sessions"); do
    psql -qtAX -v ON_ERROR_STOP=1 -d postgres -f "$work/call.sql" >"$work/out.$i" 2>"$work/err.$i" </dev/null &
    pids+=($!)
done
once_barrier_release_when "$sessions"

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
