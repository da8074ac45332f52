# Failover under load with the WAL transport (PostgreSQL 17 and later; docs/relay-operations.md,
# "Failover, per version"). A primary with wal_level = logical and a synchronous standby
# (remote_apply) that streams through a physical slot and keeps the relay's logical slot in
# sync: sync_replication_slots, hot_standby_feedback, primary_slot_name and a dbname in
# primary_conninfo on the standby, synchronized_standby_slots on the primary (so the logical
# slot never confirms past what the standby has). The slot is made by --create-wal-slot, which
# sets failover on 17+. Producers send with once.transport = 'wal' (unkeyed sends ride the WAL,
# keyed ones and send_many the table); one relay (--topics cannot split a slot) delivers to the
# inbox database, which fails over with the cluster. Halfway through the load the primary is
# stopped (immediate) and the standby promoted: the relay reconnects to the new primary and
# resumes from the synced slot. Before 17 a standby cannot keep a logical slot: skipped (77).

fo_wal_promote() {
    promote_standby
    chaos_fault "primary stopped + standby promoted"
}

# The synced copy of the slot on the standby: persisted (not temporary), ready for promotion.
fo_wal_slot_synced() {
    [ "$(psql -X -At -h "$STANDBY_DIR" -d postgres -c "SELECT count(*) FROM pg_replication_slots
          WHERE slot_name = 'once_relay' AND synced AND NOT temporary AND invalidation_reason IS NULL")" = 1 ]
}

# The drain also waits for the slot (on whichever server is primary) to confirm past the end of
# the load: a message in the WAL is in no table.
fo_wal_table_drained() {
    [ "$(psql -X -At -d "${CHAOS_DB:-$SRC_DB}" -c "SELECT count(*) FROM once.outbox WHERE dead_at IS NULL" 2>/dev/null)" = 0 ]
}
chaos_outbox_drained() {
    [ -n "${FO_WAL_TARGET:-}" ] || FO_WAL_TARGET=$(psql -X -At -d "$CHAOS_DB" -c "SELECT pg_current_wal_lsn()" 2>/dev/null) || return 1
    [ "$(psql -X -At -d "$CHAOS_DB" -c "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'once_relay'
          AND confirmed_flush_lsn >= '$FO_WAL_TARGET'" 2>/dev/null)" = 1 ] || return 1
    fo_wal_table_drained
}

scenario_main() {
    start_postgres synchronous_commit=remote_apply wal_level=logical
    if [ "$(psql -X -At -d postgres -c "SHOW server_version_num")" -lt 170000 ]; then
        echo "skipped: PostgreSQL $(psql -X -At -d postgres -c "SHOW server_version") cannot keep a logical slot on a standby (sync_replication_slots is 17+); on a promotion the slot and its unpublished messages are lost, so once-relay refuses the WAL transport with physical standbys there (relay_wal_physical_standby.sh)"
        exit 77
    fi
    PRIMARY_DIR=$ONCE_CLUSTER_DIR
    psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SELECT pg_create_physical_replication_slot('standby1')" >/dev/null
    STANDBY_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-standby.XXXXXX")
    [ "$(id -u)" = 0 ] && chown postgres: "$STANDBY_DIR"
    chmod 700 "$STANDBY_DIR"
    once_as_server_user pg_basebackup -c fast -D "$STANDBY_DIR/data" -R -X stream -S standby1 \
        -d "host=$PRIMARY_DIR port=5432 user=postgres dbname=postgres" >/dev/null
    # (the last primary_conninfo wins; slot sync needs its dbname)
    once_as_server_user bash -c "echo \"primary_conninfo = 'host=$PRIMARY_DIR port=5432 user=postgres dbname=postgres application_name=standby1'\" >>'$STANDBY_DIR/data/postgresql.auto.conf'"
    # Set after the base backup, so the promoted standby does not wait for a standby1 of its own.
    psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "ALTER SYSTEM SET synchronized_standby_slots = 'standby1'" \
        -c "SELECT pg_reload_conf()" >/dev/null
    once_cluster_run "$STANDBY_DIR" synchronous_commit=remote_apply wal_level=logical sync_replication_slots=on hot_standby_feedback=on
    export PGHOST=$PRIMARY_DIR
    psql -X -q -d postgres -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
    once_wait_for "standby streaming (sync)" 30 sync_standbys || fail "standby not synchronous"

    local hosts="host=$PRIMARY_DIR,$STANDBY_DIR port=5432,5432 user=postgres target_session_attrs=read-write"
    local db="$hosts dbname=src"
    local inbox="postgresql://postgres@/dst?host=$PRIMARY_DIR,$STANDBY_DIR&port=5432,5432&target_session_attrs=read-write&source=src"
    "${RELAY_AS[@]}" "$RELAY_BIN" --db "$db" --create-wal-slot >>"$CHAOS_RUN/slots.log" 2>&1 || fail "--create-wal-slot: $(cat "$CHAOS_RUN/slots.log")"
    psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'"
    # Move the slot once (a logical message of another prefix: decoded, skipped), so the
    # standby's copy can be persisted; then wait for it.
    psql_src -c "SELECT pg_logical_emit_message(true, 'chaos_warmup', 'x')" >/dev/null
    CHAOS_TOPICS=(chaos.p.orders chaos.p.mail)
    start_relay inbox --db "$db" --sink "$inbox" --transport wal --lease 2s --batch 200 --poll-interval 100ms --reconnect-max 1s
    once_wait_for "the slot synced to the standby" 60 fo_wal_slot_synced ||
        fail "the standby has no synced once_relay slot: $(psql -X -At -h "$STANDBY_DIR" -d postgres -c "SELECT slot_name, synced, temporary, invalidation_reason FROM pg_replication_slots"); $(tail -5 "$STANDBY_DIR/server.log")"
    chaos_fact "WAL slot" "once_relay, failover, synced to the standby before the load"
    CHAOS_COLLECTORS=(chaos_collect_inbox)
    chaos_load "$db"
    CHAOS_FO_AT=$((SECONDS + CHAOS_SECONDS / 2))
    fo_once() { if [ "${CHAOS_FAULTS[primary stopped + standby promoted]:-0}" = 0 ] && (( SECONDS >= CHAOS_FO_AT )); then fo_wal_promote; fi; }
    chaos_during_load fo_once 1
    CHAOS_AFTER_DRAIN+=(fo_wal_facts)
    chaos_finish 180
}

fo_wal_facts() {
    chaos_fact "relay reopened the stream" "$(grep -c "WAL stream open again" "$T/relay-inbox.log" || true) time(s)"
    chaos_fact "rows inserted into once.outbox (new primary)" "$(psql -X -At -d "$CHAOS_DB" -c "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relid = 'once.outbox'::regclass")"
    relay_log_has inbox "WAL stream closed" && CHAOS_CRITERIA_MISSED+="the relay found the slot unusable after the promotion; "
    return 0
}
