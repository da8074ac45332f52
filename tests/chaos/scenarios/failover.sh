# Failover under load: a primary with a synchronous streaming standby (remote_apply: a commit
# the producer saw is on the standby). Producers and both relays (one to JetStream, one to
# the inbox database, which fails over with the cluster) use multi-host conninfo with
# target_session_attrs=read-write. Halfway through the load the primary is stopped
# (immediate) and the standby promoted; the old primary stays down. One promotion per run.

fo_promote() {
    promote_standby
    chaos_fault "primary stopped + standby promoted"
}

scenario_main() {
    start_postgres synchronous_commit=remote_apply wal_level=replica
    start_standby
    start_nats
    local hosts="host=$PRIMARY_DIR,$STANDBY_DIR port=5432,5432 user=postgres target_session_attrs=read-write"
    local db="$hosts dbname=src"
    local inbox="postgresql://postgres@/dst?host=$PRIMARY_DIR,$STANDBY_DIR&port=5432,5432&target_session_attrs=read-write&source=src"
    CHAOS_TOPICS=(chaos.n.orders chaos.n.stock chaos.p.orders chaos.p.mail)
    start_relay nats --db "$db" --sink "nats://127.0.0.1:$NATS_PORT?stream=CHAOS&subject_prefix=once.&create_stream=1" \
        --topics 'chaos.n.>' --lease 2s --batch 200 --poll-interval 100ms --reconnect-max 1s
    start_relay inbox --db "$db" --sink "$inbox" --topics 'chaos.p.>' --lease 2s --batch 200 --poll-interval 100ms --reconnect-max 1s
    CHAOS_COLLECTORS=(chaos_collect_inbox "chaos_collect_stream 127.0.0.1:$NATS_PORT CHAOS")
    chaos_load "$db"
    CHAOS_FO_AT=$((SECONDS + CHAOS_SECONDS / 2))
    fo_once() { if [ "${CHAOS_FAULTS[primary stopped + standby promoted]:-0}" = 0 ] && (( SECONDS >= CHAOS_FO_AT )); then fo_promote; fi; }
    chaos_during_load fo_once 1
    chaos_finish 180
}
