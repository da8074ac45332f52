#!/usr/bin/env bash
# Two relays on one slot (a relay group), against a real server: the slot streams to one
# connection at a time, so the second relay stands by. It says so once (info, not an error per
# retry), reports once_wal_stream_active 0 and claims the outbox table meanwhile. Producers
# run; the streaming relay is killed with kill -9; the standby takes the slot over
# (once_wal_stream_active 1) and streams from the slot's confirmed position. Every message is
# delivered, and the duplicates are only the dead relay's unconfirmed tail.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
PRODUCERS=${RELAY_WAL_STANDBY_PRODUCERS:-4}
ROUNDS=${RELAY_WAL_STANDBY_ROUNDS:-40}   # per producer: psql calls of 10 transactions

start_postgres fsync=off wal_level=logical
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'"

port_a=$(free_port) port_b=$(free_port)
relay_args=(--db "$SRC_DB" --sink stdout: --transport wal --batch 20 --max-in-flight 20 --poll-interval 100ms --reconnect-max 1s)
metric() { curl -fsS "http://127.0.0.1:$1/metrics" 2>/dev/null | awk -v m="$2" '$1 == m { print $2 }'; }
active_is() { [ "$(metric "$1" once_wal_stream_active)" = "$2" ]; }
start_relay a "${relay_args[@]}" --metrics "127.0.0.1:$port_a"
once_wait_for "relay a streams the slot" 30 active_is "$port_a" 1 || fail "relay a does not stream"
start_relay b "${relay_args[@]}" --metrics "127.0.0.1:$port_b"
once_wait_for "relay b stands by" 30 relay_log_has b "standing by" || fail "relay b did not stand by"
active_is "$port_b" 0 || fail "relay b: once_wal_stream_active is $(metric "$port_b" once_wal_stream_active), want 0"

say "$PRODUCERS producers x $ROUNDS x 10 transactions (2 unkeyed, every 5th one keyed message too)"
producer() {
    local p=$1 r i
    for ((r = 1; r <= ROUNDS; r++)); do
        for ((i = r * 10 - 9; i <= r * 10; i++)); do
            echo "BEGIN;"
            echo "SELECT once.send('t.w', jsonb_build_object('p', $p, 'i', $i, 's', 'a'));"
            echo "SELECT once.send('t.w', jsonb_build_object('p', $p, 'i', $i, 's', 'b'));"
            ((i % 5 == 0)) && echo "SELECT once.send('t.k', jsonb_build_object('p', $p, 'i', $i), key => 'k$p');"
            echo "COMMIT;"
        done | psql_src >>"$T/sent-$p.txt" || return 1
        sleep 0.05   # (a pace, so the kill lands while they send)
    done
}
pids=()
for ((p = 1; p <= PRODUCERS; p++)); do producer "$p" & pids+=($!); done
total=$(( PRODUCERS * ROUNDS * 10 * 2 + PRODUCERS * ROUNDS * 2 ))
lines() { [ -f "$T/relay-$1.out" ] && [ "$(wc -l <"$T/relay-$1.out")" -ge "$2" ]; }
once_wait_for "relay a delivered a third" 60 lines a $((total / 3)) || fail "relay a delivered too little"
kill9_relay a
killed_at=$SECONDS
producers_running=0
for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && producers_running=$((producers_running + 1)); done
once_wait_for "relay b takes the slot over" 30 relay_log_has b "took the slot over" || fail "relay b did not take over"
takeover=$((SECONDS - killed_at))
once_wait_for "relay b's once_wal_stream_active 1" 10 active_is "$port_b" 1 || fail "relay b: once_wal_stream_active stayed $(metric "$port_b" once_wal_stream_active)"
for pid in "${pids[@]}"; do wait "$pid" || fail "a producer failed"; done
[ "$producers_running" -gt 0 ] || fail "the producers had finished before the kill: nothing tested mid-load (raise RELAY_WAL_STANDBY_ROUNDS)"
sent_ids() { cat "$T"/sent-*.txt | grep -E '^[0-9a-f-]{36}$' | sort; }
[ "$(sent_ids | wc -l)" = "$total" ] || fail "producers sent $(sent_ids | wc -l), want $total"
all_delivered() { [ "$(cat "$T/relay-a.out" "$T/relay-b.out" 2>/dev/null | jq -r .id | sort -u | wc -l)" -ge "$total" ]; }
once_wait_for "all $total delivered" 120 all_delivered ||
    fail "delivered $(cat "$T"/relay-[ab].out | jq -r .id | sort -u | wc -l) of $total"
once_wait_for "the table drained" 30 outbox_empty || fail "outbox still has $(outbox_left)"
diff -q <(sent_ids) <(cat "$T/relay-a.out" "$T/relay-b.out" | jq -r .id | sort -u) >/dev/null || fail "delivered ids differ from sent"
stop_relay b
[ "$RELAY_RC" = 0 ] || fail "relay b exited $RELAY_RC"

# The stream (t.w, unkeyed): b starts at the slot's confirmed position, so its first t.w
# messages repeat a's last ones, and nothing else repeats.
jq -r 'select(.topic == "t.w") | .id' "$T/relay-a.out" >"$T/wa.txt"
jq -r 'select(.topic == "t.w") | .id' "$T/relay-b.out" >"$T/wb.txt"
dups=$(sort "$T/wa.txt" "$T/wb.txt" | uniq -d | wc -l)
diff -q <(tail -n "$dups" "$T/wa.txt") <(head -n "$dups" "$T/wb.txt") >/dev/null ||
    fail "the duplicates of the stream are not relay a's unconfirmed tail"
[ "$(sort "$T/wb.txt" | uniq -d | wc -l)" = 0 ] || fail "relay b streamed a message twice"
[ "$(sort "$T/wa.txt" | uniq -d | wc -l)" = 0 ] || fail "relay a streamed a message twice"
# Said once, at info; no error or warning per retry.
[ "$(grep -c "standing by" "$T/relay-b.log")" = 1 ] || fail "relay b logged standing by $(grep -c "standing by" "$T/relay-b.log") times"
grep -q "info: WAL stream: standing by" "$T/relay-b.log" || fail "standing by is not logged at info: $(grep "standing by" "$T/relay-b.log")"
! grep -Eq "(warning|error): .*is active for PID" "$T/relay-b.log" || fail "relay b warned about the active slot"
say "relay_wal_standby: b stood by, took over ${takeover}s after the kill -9; $total delivered, $dups duplicate(s), all of them relay a's unconfirmed tail"
