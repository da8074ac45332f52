#!/usr/bin/env bash
# Several sessions deliver the same messages at the same moment; the handler's side effect must
# happen exactly once per message.
#  round 1: 16 sessions deliver one message, released together by a barrier (an exclusive
#           advisory lock every session waits for in shared mode): one "processed", the rest
#           "duplicate", one effect.
#  round 2: 8 sessions deliver the same 40 messages, each in its own shuffled order, one
#           transaction per message; every third session's handler fails (a relay whose
#           handler hits an error), so some first attempts roll back and a waiting session
#           takes over. Still exactly one effect per message, and every delivery is accounted for.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
source "$here/../lib/barrier.sh"
sessions=16
round2_sessions=8
messages=40

once_cluster_start fsync=off
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-inbox.XXXXXX")
once_barrier_open
trap 'exec 3>&-; once_cluster_stop; [ -n "${ONCE_KEEP:-}" ] || rm -rf "$work"' EXIT

psql -qX -v ON_ERROR_STOP=1 -d postgres <<'SQL'
CREATE EXTENSION pg_once;
CREATE TABLE effects (message_id text, session text, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION ship(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO effects (message_id, session) VALUES (msg.message_id, msg.headers->>'session');
    PERFORM pg_sleep(0.001);   -- hold the transaction open a moment, widening the race
    IF (msg.headers->>'fail')::boolean THEN
        RAISE EXCEPTION 'handler failed in session %', msg.headers->>'session' USING ERRCODE = 'P0001';
    END IF;
END $$;
SELECT once.subscribe('order.*', 'ship(once.inbound)');
SQL
once_barrier_hold

# ---- round 1: one message, all sessions at once
pids=()
for i in $(seq 1 "$sessions"); do
    cat >"$work/r1.$i.sql" <<SQL
$once_barrier_pass
SELECT once.deliver('shop', 'order-42', 'order.created', '{"id": 42}', '{"session": "$i"}');
SQL
    psql -qtAX -v ON_ERROR_STOP=1 -d postgres -f "$work/r1.$i.sql" >"$work/r1.out.$i" 2>"$work/r1.err.$i" </dev/null &
    pids+=($!)
done
once_barrier_release_when "$sessions"
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
[ "$failed" -eq 0 ] || { cat "$work"/r1.err.*; echo "FAIL: $failed sessions failed"; exit 1; }
processed=$(cat "$work"/r1.out.* | grep -c '^processed$' || true)
duplicate=$(cat "$work"/r1.out.* | grep -c '^duplicate$' || true)
effects=$(psql -qtAX -d postgres -c "SELECT count(*) FROM effects WHERE message_id = 'order-42'")
echo "round 1: sessions=$sessions processed=$processed duplicate=$duplicate effects=$effects"
[ "$processed" = 1 ] || { echo "FAIL: processed $processed times"; exit 1; }
[ "$duplicate" = $((sessions - 1)) ] || { echo "FAIL: expected $((sessions - 1)) duplicates"; exit 1; }
[ "$effects" = 1 ] || { echo "FAIL: the side effect happened $effects times"; exit 1; }

# ---- round 2: many messages, shuffled, some handlers failing
once_barrier_hold
pids=()
for i in $(seq 1 "$round2_sessions"); do
    fail=false
    [ $((i % 3)) = 0 ] && fail=true
    {
        echo "$once_barrier_pass"
        echo "\\set ON_ERROR_STOP 0"
        for m in $(seq 1 "$messages" | shuf); do
            echo "SELECT 'm$m ' || once.deliver('shop', 'm$m', 'order.paid', '{}', '{\"session\": \"$i\", \"fail\": $fail}');"
        done
    } >"$work/r2.$i.sql"
    psql -qtAX -d postgres -f "$work/r2.$i.sql" >"$work/r2.out.$i" 2>"$work/r2.err.$i" </dev/null &
    pids+=($!)
done
once_barrier_release_when "$round2_sessions"
for pid in "${pids[@]}"; do wait "$pid"; done

processed=$(cat "$work"/r2.out.* | grep -c ' processed$' || true)
duplicate=$(cat "$work"/r2.out.* | grep -c ' duplicate$' || true)
handler_errors=$(cat "$work"/r2.err.* | grep -c 'handler failed in session' || true)
other_errors=$(cat "$work"/r2.err.* | grep ERROR | grep -vc 'handler failed in session' || true)
read -r distinct total < <(psql -qtAX -F ' ' -d postgres -c \
    "SELECT count(DISTINCT message_id), count(*) FROM effects WHERE message_id LIKE 'm%'")
recorded=$(psql -qtAX -d postgres -c "SELECT count(*) FROM once.inbox WHERE source = 'shop' AND message_id LIKE 'm%'")
echo "round 2: sessions=$round2_sessions messages=$messages processed=$processed duplicate=$duplicate" \
     "handler_errors=$handler_errors other_errors=$other_errors effects=$total distinct=$distinct recorded=$recorded"
[ "$other_errors" = 0 ] || { cat "$work"/r2.err.*; echo "FAIL: unexpected errors"; exit 1; }
[ $((processed + duplicate + handler_errors)) = $((round2_sessions * messages)) ] ||
    { echo "FAIL: deliveries unaccounted for"; exit 1; }
[ "$processed" = "$messages" ] || { echo "FAIL: expected $messages processed"; exit 1; }
[ "$total" = "$messages" ] && [ "$distinct" = "$messages" ] ||
    { echo "FAIL: side effects: $total for $distinct messages, want $messages once each"; exit 1; }
[ "$recorded" = "$messages" ] || { echo "FAIL: $recorded inbox rows"; exit 1; }
failing_effects=$(psql -qtAX -d postgres -c "SELECT count(*) FROM effects WHERE message_id LIKE 'm%' AND session::int % 3 = 0")
[ "$failing_effects" = 0 ] || { echo "FAIL: a failed handler's effect survived"; exit 1; }
echo "2 passed, 0 failed"
