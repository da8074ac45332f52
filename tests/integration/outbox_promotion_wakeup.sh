#!/usr/bin/env bash
# Whatever makes a message claimable wakes the relays.
# A keyed message waits behind its key's head; the acknowledgement of the head promotes it at
# commit. 0.2 sent no wake-up for that commit (it sent nothing), so a relay serving only the
# promoted message's topic -- a saga's replies, keyed by saga id like its commands -- waited
# for its poll interval on every step. Discarding a dead head promotes the same way.
# Without shared_preload_libraries the wake-up is a NOTIFY sent at commit itself, so a
# listener that starts after the sends sees exactly the wake-ups of what follows. (Debian's
# python3-psycopg belongs to the system interpreter, /usr/bin/python3.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
once_cluster_start fsync=off
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-wakeup.XXXXXX")
chmod 755 "$work"
trap 'once_cluster_stop; rm -rf "$work"' EXIT
fails=0
check() { if "${@:2}"; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); fi; }
sql() { psql -qtAX -v ON_ERROR_STOP=1 -d postgres "$@"; }
conninfo="host=$PGHOST port=$PGPORT user=$PGUSER dbname=postgres"

sql -c "CREATE EXTENSION pg_once" >/dev/null

# listen_during NAME SQL...: the number of wake-ups (NOTIFY once_outbox) while SQL runs.
listen_during() {
    local name=$1
    shift
    rm -f "$work/$name.ready"
    /usr/bin/python3 "$here/lib/listen_once.py" "$conninfo" once_outbox "$work/$name.ready" 5 >"$work/$name.count" &
    local pid=$!
    once_wait_for "the listener of $name" 10 test -s "$work/$name.ready"
    sql "$@" >/dev/null
    wait "$pid"
    cat "$work/$name.count"
}

# The reply's command: the head of key saga-1 is in flight, the reply behind it waits.
sql -c "SELECT once.send('cafe.stock.reserve', '{}', key => 'saga-1')" \
    -c "SELECT once.send('cafe.saga.reply', '{}', key => 'saga-1')" >/dev/null
head=$(sql -c "SELECT id FROM once.claim('commands', 10, topics => '{cafe.stock.reserve}')")
check "the head is claimed, the keyed reply behind it waits" \
    test "$(sql -c "SELECT count(*) FROM once.claim('replies', 10, topics => '{cafe.saga.reply}')")" = 0
check "acknowledging the head wakes the relays (the reply became claimable)" \
    test "$(listen_during ack -c "SELECT once.ack('commands', ARRAY['$head']::uuid[])")" -ge 1
check "... and the reply is claimable now" \
    test "$(sql -c "SELECT count(*) FROM once.claim('replies', 10, topics => '{cafe.saga.reply}')")" = 1

# A dead head: discarding it promotes the next message of its key.
sql -c "SELECT once.send('t.dead', '{}', key => 'k2')" -c "SELECT once.send('t.next', '{}', key => 'k2')" >/dev/null
dead=$(sql -c "SELECT id FROM once.claim('r', 10, topics => '{t.dead}')")
sql -c "SELECT once.dead('r', '$dead', 'poison')" >/dev/null
check "discarding a dead head wakes the relays" \
    test "$(listen_during discard -c "SELECT once.discard(ARRAY['$dead']::uuid[])")" -ge 1
check "an acknowledgement that promotes nothing sends no wake-up" \
    test "$(listen_during quiet -c "SELECT once.ack('replies', ARRAY(SELECT id FROM once.claim('replies', 10, topics => '{t.next}')))")" = 0

[ "$fails" -eq 0 ] || { echo "outbox_promotion_wakeup: $fails checks failed"; exit 1; }
echo "outbox_promotion_wakeup: all checks passed"
