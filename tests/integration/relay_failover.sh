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
start_standby

start_nats
DB2="host=$PRIMARY_DIR,$STANDBY_DIR port=5432,5432 user=postgres dbname=src target_session_attrs=read-write"
send_messages $((N / 2)) 1000 1
start_relay r --db "$DB2" --sink "nats://127.0.0.1:$NATS_PORT?stream=FO&subject_prefix=once.&create_stream=1" \
    --lease 2s --batch 100 --poll-interval 100ms --reconnect-max 1s
once_wait_for "some progress" 60 stream_has FO $((N / 8)) || fail "no progress"
say "failover at $(stream_msgs FO) delivered: stopping the primary, promoting the standby"
promote_standby
send_messages $((N / 2)) 1000 $((N / 2 + 1))   # producers continue on the new primary
once_wait_for "all $N at JetStream" 180 stream_has FO "$N" || fail "stream has $(stream_msgs FO) of $N"
once_wait_for "outbox drained" 60 outbox_empty || fail "outbox still has $(outbox_left)"
relay_log_has r "reconnected to $STANDBY_DIR" || fail "relay did not report the new primary"
stop_relay r; [ "$RELAY_RC" = 0 ] || fail "exit code $RELAY_RC"
[ "$(stream_msgs FO)" = "$N" ] || fail "JetStream has $(stream_msgs FO), want exactly $N"
say "relay_failover: OK"
