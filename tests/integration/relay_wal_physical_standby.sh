#!/usr/bin/env bash
# The WAL transport with a physical standby attached (docs/relay-operations.md, "Failover, per version"),
# the relay logging in as a role with REPLICATION and once_relay only (no pg_monitor):
#  * before PostgreSQL 17 (no slot sync): the relay refuses to stream (an error naming
#    --wal-accept-slot-loss-on-failover, once_wal_failover_refused 1, /healthz 503) and still
#    serves the table; with --wal-accept-slot-loss-on-failover it streams, with a warning;
#  * on 17 and later (the slot is created with failover): no refusal.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres fsync=off wal_level=logical
version=$(psql_src -c "SHOW server_version_num")
# A plain (asynchronous) streaming standby made with pg_basebackup.
PRIMARY_DIR=$ONCE_CLUSTER_DIR
STANDBY_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-standby.XXXXXX")
[ "$(id -u)" = 0 ] && chown postgres: "$STANDBY_DIR"
chmod 700 "$STANDBY_DIR"
once_as_server_user pg_basebackup -c fast -D "$STANDBY_DIR/data" -R -X stream -h "$PRIMARY_DIR" -p 5432 -U postgres >/dev/null
once_cluster_run "$STANDBY_DIR"
export PGHOST=$PRIMARY_DIR
streaming() { [ "$(psql -X -At -d postgres -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" = 1 ]; }
once_wait_for "the standby streaming" 30 streaming || fail "the standby does not stream"

psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE ROLE relay_r LOGIN REPLICATION IN ROLE once_relay"
RELAY_DB="host=$PGHOST port=$PGPORT user=relay_r dbname=src"
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'"
mport=$(free_port)
metric() { curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk -v m="$1" '$1 == m { print $2 }'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }
healthz() { curl -sS -o "$T/healthz.txt" -w '%{http_code}' "http://127.0.0.1:$mport/healthz" 2>/dev/null; }
out_has() { grep -q "$2" "$T/relay-$1.out" 2>/dev/null; }

psql_src -c "SELECT once.send('t.w', '{\"n\": 1}')" >/dev/null
if [ "$version" -lt 170000 ]; then
    say "PostgreSQL $version with a physical standby: refused"
    start_relay s1 --db "$RELAY_DB" --sink stdout: --transport wal --poll-interval 100ms --metrics "127.0.0.1:$mport"
    once_wait_for "the refusal logged" 30 relay_log_has s1 "refusing the WAL transport" || fail "relay s1 did not refuse"
    grep "refusing the WAL transport" "$T/relay-s1.log" | grep -q -- "--wal-accept-slot-loss-on-failover" ||
        fail "the refusal does not name the option"
    once_wait_for "once_wal_failover_refused 1" 30 metric_is once_wal_failover_refused 1 ||
        fail "once_wal_failover_refused is $(metric once_wal_failover_refused)"
    [ "$(healthz)" = 503 ] || fail "/healthz answers $(healthz) while refused"
    psql_src -c "SELECT once.send('t.keyed', '{}', key => 'k')" >/dev/null
    once_wait_for "the table still served" 30 out_has s1 t.keyed || fail "relay s1 stopped serving the table"
    out_has s1 '"t.w"' && fail "relay s1 streamed although it refused"
    stop_relay s1
    [ "$RELAY_RC" = 0 ] || fail "relay s1 exited $RELAY_RC"
    say "with --wal-accept-slot-loss-on-failover: streams, with a warning"
    start_relay s2 --db "$RELAY_DB" --sink stdout: --transport wal --poll-interval 100ms --metrics "127.0.0.1:$mport" \
        --wal-accept-slot-loss-on-failover
    once_wait_for "the WAL message delivered" 30 out_has s2 '"t.w"' || fail "relay s2 did not stream"
    relay_log_has s2 "warn.*--wal-accept-slot-loss-on-failover" || fail "relay s2 did not warn about the risk"
    metric_is once_wal_failover_refused 0 || fail "once_wal_failover_refused is $(metric once_wal_failover_refused)"
    [ "$(healthz)" = 200 ] || fail "/healthz answers $(healthz) with the risk accepted"
    stop_relay s2
else
    say "PostgreSQL $version with a physical standby: the slot has failover, no refusal"
    start_relay s1 --db "$RELAY_DB" --sink stdout: --transport wal --poll-interval 100ms --metrics "127.0.0.1:$mport"
    once_wait_for "the WAL message delivered" 30 out_has s1 '"t.w"' || fail "relay s1 did not stream on $version"
    relay_log_has s1 "refusing" && fail "relay s1 refused on $version"
    relay_log_has s1 "without failover" && fail "a warning about failover on a slot created with it"
    metric_is once_wal_failover_refused 0 || fail "once_wal_failover_refused is $(metric once_wal_failover_refused)"
    [ "$(healthz)" = 200 ] || fail "/healthz answers $(healthz)"
    stop_relay s1
fi
[ "$RELAY_RC" = 0 ] || fail "the relay exited $RELAY_RC"
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --drop-wal-slot >/dev/null || fail "--drop-wal-slot at the end"
say "relay_wal_physical_standby: OK"
