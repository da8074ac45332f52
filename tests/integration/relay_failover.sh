#!/usr/bin/env bash
# once-relay follows a failover: a primary with a synchronous streaming standby
# (synchronous_commit=remote_apply); the relay's conninfo names both hosts with
# target_session_attrs=read-write. Mid-run the primary dies and the standby is promoted; the
# relay continues on the new primary. Every message whose commit the producer saw arrives at
# JetStream exactly once.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N=${RELAY_TEST_N:-6000}

start_postgres synchronous_commit=remote_apply wal_level=replica
PRIMARY_DIR=$ONCE_CLUSTER_DIR
STANDBY_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-standby.XXXXXX")
chown postgres: "$STANDBY_DIR"; chmod 700 "$STANDBY_DIR"
once_as_server_user pg_basebackup -c fast -D "$STANDBY_DIR/data" -R -X stream -h "$PRIMARY_DIR" -p 5432 -U postgres >/dev/null
once_cluster_run "$STANDBY_DIR" synchronous_commit=remote_apply
export PGHOST=$PRIMARY_DIR
# Synchronous only once the standby streams (otherwise the setup itself would wait for it).
psql -X -q -d postgres -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
once_wait_for "standby streaming (sync)" 30 bash -c "[ \"\$(psql -X -At -h '$PRIMARY_DIR' -d postgres -c \"SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'\")\" = 1 ]" || fail "standby not synchronous"

start_nats
DB2="host=$PRIMARY_DIR,$STANDBY_DIR port=5432,5432 user=postgres dbname=src target_session_attrs=read-write"
send_messages $((N / 2)) 1000 1
start_relay r --db "$DB2" --sink "nats://127.0.0.1:$NATS_PORT?stream=FO&subject_prefix=once.&create_stream=1" \
    --lease 2s --batch 100 --poll-interval 100ms --reconnect-max 1s
once_wait_for "some progress" 60 stream_has FO $((N / 8)) || fail "no progress"
say "failover at $(stream_msgs FO) delivered: stopping the primary, promoting the standby"
once_as_server_user pg_ctl stop -D "$PRIMARY_DIR/data" -m immediate -w >/dev/null
once_as_server_user pg_ctl promote -w -D "$STANDBY_DIR/data" >/dev/null
export PGHOST=$STANDBY_DIR
once_wait_for "standby promoted" 30 bash -c "[ \"\$(psql -X -At -d src -c 'SELECT pg_is_in_recovery()')\" = f ]" || fail "promotion"
send_messages $((N / 2)) 1000 $((N / 2 + 1))   # producers continue on the new primary
once_wait_for "all $N at JetStream" 180 stream_has FO "$N" || fail "stream has $(stream_msgs FO) of $N"
once_wait_for "outbox drained" 60 outbox_empty || fail "outbox still has $(outbox_left)"
relay_log_has r "reconnected to $STANDBY_DIR" || fail "relay did not report the new primary"
stop_relay r; [ "$RELAY_RC" = 0 ] || fail "exit code $RELAY_RC"
[ "$(stream_msgs FO)" = "$N" ] || fail "JetStream has $(stream_msgs FO), want exactly $N"
say "relay_failover: OK"
