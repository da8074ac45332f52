#!/usr/bin/env bash
# once-relay survives kill -9: two relays (JetStream for t.a, the inbox for t.b) are killed
# several times mid-run and restarted; afterwards every message is at its sink exactly once.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N=${RELAY_TEST_N:-20000}
KILLS=${RELAY_TEST_KILLS:-4}

start_postgres
start_nats
send_messages "$N" 1000
na=$(psql_src -c "SELECT count(*) FROM once.outbox WHERE topic = 't.a'")
nb=$(psql_src -c "SELECT count(*) FROM once.outbox WHERE topic = 't.b'")
NATS_URI="nats://127.0.0.1:$NATS_PORT?stream=CRASH&subject_prefix=once.&create_stream=1"
run_both() {
    start_relay jn --db "$SRC_DB" --sink "$NATS_URI" --topics t.a --lease 2s --batch 200 --poll-interval 100ms
    start_relay pi --db "$SRC_DB" --sink "$DST_URI&source=src" --topics t.b --lease 2s --batch 200 --poll-interval 100ms
}
progress() { echo $(( $(stream_msgs CRASH) + $(psql_dst -c 'SELECT count(*) FROM relay_received') )); }
grew() { [ "$(progress)" -ge "$1" ]; }

run_both
for ((k = 1; k <= KILLS; k++)); do
    target=$(( N * k / (KILLS + 2) ))
    once_wait_for "progress to $target before kill $k" 120 grew "$target" || fail "no progress ($(progress))"
    say "kill -9 both relays at $(progress) delivered"
    kill9_relay jn; kill9_relay pi
    run_both
done
once_wait_for "all $na at JetStream" 240 stream_has CRASH "$na" || fail "stream has $(stream_msgs CRASH) of $na"
once_wait_for "all $nb at the inbox" 240 inbox_has "$nb" || fail "inbox has $(psql_dst -c 'SELECT count(DISTINCT id) FROM relay_received') of $nb"
once_wait_for "outbox drained" 60 outbox_empty || fail "outbox still has $(outbox_left)"
stop_relay jn; stop_relay pi
[ "$(stream_msgs CRASH)" = "$na" ] || fail "JetStream has $(stream_msgs CRASH) messages, want exactly $na"
[ "$(psql_dst -c 'SELECT count(*) FROM relay_received')" = "$nb" ] || fail "inbox handler ran more than once for some message"
say "relay_crash: OK ($KILLS kill -9 rounds, $na at JetStream, $nb at the inbox, no loss, no duplicates)"
