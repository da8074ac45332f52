#!/usr/bin/env bash
# A frozen relay does not hold its locked batch for hours. Relay A runs in
# --claim-mode locked with the stdout sink writing into a pipe nobody reads: once the pipe is
# full, A hangs inside the sink (a hung sink library) with a batch claimed, its transaction
# idle. A is then stopped with SIGSTOP as well. Relay B, started next to it, must deliver
# every message, A's batch included, within the bound docs/design.md ("The loop in detail") gives for A's settings
# (--lease + --sink-timeout + 5 s): the database ends A's idle transaction by itself. Before
# the fix A's transaction stayed open until TCP gave up (never, for a stopped process whose
# kernel still answers), and its messages and every later one of their keys waited with it.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N=${RELAY_TEST_N:-3000}
LEASE_S=3
SINK_TIMEOUT_S=1
BOUND_S=$((LEASE_S + SINK_TIMEOUT_S + 5))   # outbox/locked_hold_bound.hpp, docs/design.md
SLACK_S=10                                   # B's drain of N messages once A's batch is free

start_postgres
send_messages "$N" 50

# A's stdout: a FIFO this shell holds open for reading (so A's open succeeds) but never reads.
mkfifo "$T/relay-A.out"
exec 9<>"$T/relay-A.out"
start_relay A --db "$SRC_DB" --sink stdout: --claim-mode locked --batch 100 --lease ${LEASE_S}s \
    --sink-timeout ${SINK_TIMEOUT_S}s --maintenance off
# A hangs when one of its transactions has sat idle for over a second: a working relay with the
# stdout sink settles a batch in milliseconds.
a_hung() {
    [ "$(psql_src -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'once-relay A'
                       AND state = 'idle in transaction' AND now() - state_change > interval '1 second'")" -ge 1 ]
}
once_wait_for "relay A hung in its sink with a locked batch" 60 a_hung || fail "relay A never hung holding a batch"
kill -STOP "$(relay_pid A)"
stopped_at=$SECONDS
# The messages A's transaction holds: deleted by it, so locked to everyone else.
held_ids() {
    psql_src -c "WITH free AS (SELECT id FROM once.outbox FOR UPDATE SKIP LOCKED)
                 SELECT o.id FROM once.outbox o WHERE NOT EXISTS (SELECT 1 FROM free f WHERE f.id = o.id)"
}
held_ids > "$T/held"
held=$(wc -l < "$T/held")
[ "$held" -gt 0 ] || fail "relay A holds no message: the test caught it between batches"
say "relay A stopped (SIGSTOP) holding $held message(s); the bound for its settings is ${BOUND_S}s"

start_relay B --db "$SRC_DB" --sink stdout: --claim-mode locked --batch 100 --maintenance off
a_in_tx() {
    psql_src -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'once-relay A' AND state LIKE 'idle in transaction%'"
}
a_released() { [ "$(a_in_tx)" = 0 ]; }
# (+1 s: this loop's own polling and the one-second resolution of $SECONDS)
once_wait_for "the database to end the stopped relay's transaction" $((BOUND_S + 1)) a_released ||
    fail "$((SECONDS - stopped_at))s after SIGSTOP relay A still holds $(a_in_tx) transaction(s) open (bound ${BOUND_S}s)"
released=$((SECONDS - stopped_at))
once_wait_for "relay B to drain the outbox, A's batch included" $SLACK_S outbox_empty ||
    fail "the outbox still has $(outbox_left) message(s) ${SLACK_S}s after relay A's batch was freed"
took=$((SECONDS - stopped_at))
jq -r .id "$T/relay-B.out" | sort -u > "$T/b-ids"
missing=$(comm -23 <(sort "$T/held") "$T/b-ids" | wc -l)
[ "$missing" = 0 ] || fail "$missing message(s) A held never reached relay B's sink"

# A resumes: its transactions are gone, it must notice, give the batch up and carry on.
cat "$T/relay-A.out" > "$T/relay-A.lines" &   # the pipe drains: A's hung write completes
BG_PIDS+=($!)
kill -CONT "$(relay_pid A)"
once_wait_for "relay A to notice its lost transaction" 30 relay_log_has A "given back" ||
    fail "relay A did not notice that its transaction was ended"
relay_alive A || fail "relay A died after SIGCONT"
stop_relay B
say "relay_locked_sigstop: OK (relay A frozen with $held message(s) locked; the database freed them ${released}s after SIGSTOP (bound ${BOUND_S}s), relay B had delivered them all ${took}s after it)"
