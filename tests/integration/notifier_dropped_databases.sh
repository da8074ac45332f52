#!/usr/bin/env bash
# Notifier slots are reclaimed when a database is dropped right after a send. 0.1 left the slot of a database dropped before its notifier connected
# "starting" forever; after 64 such drops (the number of slots) every database fell back to
# one NOTIFY per transaction. Here 100 databases send and are dropped at once (WITH (FORCE));
# in three rounds of four the notifier's connection surely fails (the database stops accepting
# connections first). Afterwards a new database still gets its own coalescing notifier.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
once_cluster_start fsync=off shared_preload_libraries=pg_once max_worker_processes=16
trap once_cluster_stop EXIT

rounds=${NOTIFIER_DROP_ROUNDS:-100}
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE notifier_template" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d notifier_template -c "CREATE EXTENSION pg_once" 2>/dev/null
for i in $(seq 1 "$rounds"); do
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE drop_$i TEMPLATE notifier_template" >/dev/null
    if [ $((i % 4)) != 0 ]; then
        # Whether the notifier connects before the DROP is a race; make its connection fail
        # for certain, as it does when the database is dropped first: the producer is already
        # connected when the database stops accepting connections, then sends.
        psql -qX -v ON_ERROR_STOP=1 -d "drop_$i" >/dev/null <<SQL
SELECT 1;
\\! psql -qX -v ON_ERROR_STOP=1 -d postgres -c "ALTER DATABASE drop_$i ALLOW_CONNECTIONS false"
SELECT once.send('t.drop', '{"i": $i}');
SQL
    else
        # The send commits (its notifier is being started) and the database is gone right after.
        psql -qX -v ON_ERROR_STOP=1 -d "drop_$i" -c "SELECT once.send('t.drop', '{\"i\": $i}')" >/dev/null
    fi
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE drop_$i WITH (FORCE)" >/dev/null
done

psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE survivor TEMPLATE notifier_template" >/dev/null
send_and_has_notifier() {
    psql -qAtX -v ON_ERROR_STOP=1 -d survivor \
        -c "SELECT once.send('t.survivor', '{}')" \
        -c "SELECT worker_pid IS NOT NULL FROM once.outbox_notifier_status()" | tail -1 | grep -qx t
}
if ! once_wait_for "a notifier for a new database after $rounds dropped ones" 30 send_and_has_notifier; then
    psql -qX -d survivor -c "SELECT * FROM once.outbox_notifier_status()"
    echo "FAIL: notifier slots leaked: the new database has no notifier" >&2
    exit 1
fi
echo "ok: after $rounds databases dropped right after a send, a new database still gets a notifier"
