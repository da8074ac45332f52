#!/usr/bin/env bash
# A saga whose commands and replies are served by two relays split by topic does not wait for
# the poll interval on each step. Commands and replies
# are keyed by saga id, so each one waits behind the other while a relay holds it; the relay's
# ack promotes the next one, and that promotion must wake the relay that serves its topic.
# 0.2 sent no wake-up for it: a 3-step saga took 2,040 ms with two relays against 71 ms with
# one. Here the relays poll every 10 s, so a missing wake-up costs seconds per step.
#   one relay:  every topic, src -> src's own inbox
#   two relays: "cmd" serves cmd.> and "reply" serves saga.> (both into src's inbox)
# A service handler answers each command with a reply keyed by the saga id.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
SAGAS=${SPLIT_SAGAS:-5}

start_postgres shared_preload_libraries=pg_once
SRC_URI="postgresql://postgres@/src?host=$PGHOST&port=$PGPORT"
psql_src >/dev/null <<'SQL'
SELECT once.saga_define('split', '{"steps": [
    {"name": "a", "action": {"topic": "cmd.a"}, "timeout": "1 minute"},
    {"name": "b", "action": {"topic": "cmd.b"}, "timeout": "1 minute"},
    {"name": "c", "action": {"topic": "cmd.c"}, "timeout": "1 minute"}],
  "reply_to": "saga.split.reply"}');
CREATE FUNCTION public.service(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    SELECT once.send(msg.headers ->> 'reply_to',
                     jsonb_build_object('saga_id', msg.payload ->> 'saga_id', 'step', msg.payload ->> 'step',
                                        'outcome', 'succeeded'),
                     key => msg.payload ->> 'saga_id') $$;
SELECT once.subscribe('cmd.>', 'public.service(once.inbound)');
SELECT once.subscribe('saga.split.reply', 'once.saga_reply_handler(once.inbound)');
SQL

# run_sagas PREFIX: starts SAGAS sagas one after the other, each once the previous completed;
# prints the median milliseconds from start to completed.
run_sagas() {
    local prefix=$1 i ms=()
    for ((i = 1; i <= SAGAS; i++)); do
        psql_src -c "SELECT once.saga_start('split', '$prefix-$i')" >/dev/null
        completed() { [ "$(psql_src -c "SELECT status FROM once.sagas WHERE saga_id = '$prefix-$i'")" = completed ]; }
        once_wait_for "saga $prefix-$i to complete" 60 completed || fail "saga $prefix-$i did not complete"
        ms+=("$(psql_src -c "SELECT round(extract(epoch FROM finished_at - created_at) * 1000)
                              FROM once.saga_instances WHERE saga_id = '$prefix-$i'")")
    done
    printf '%s\n' "${ms[@]}" | sort -n | sed -n "$(((SAGAS + 1) / 2))p"
}

start_relay all --db "$SRC_DB" --sink "$SRC_URI" --poll-interval 10s --maintenance off
one=$(run_sagas one)
stop_relay all
say "one relay for every topic: median ${one} ms per 3-step saga"

start_relay cmd --db "$SRC_DB" --sink "$SRC_URI" --topics 'cmd.>' --poll-interval 10s --maintenance off
start_relay reply --db "$SRC_DB" --sink "$SRC_URI" --topics 'saga.>' --poll-interval 10s --maintenance off
two=$(run_sagas two)
say "two relays split by topic: median ${two} ms per 3-step saga ($(awk -v a="$two" -v b="$one" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 1) }')x)"

# A missing wake-up costs up to the 10 s poll interval on each of 6 hops; the issue's bound
# is 2x the one-relay time (+250 ms for this shared machine's scheduling).
[ "$two" -le $((2 * one + 250)) ] || fail "two relays took ${two} ms per saga, over 2x the ${one} ms of one relay"
echo "PASS"
