# relay kill -9: four relays on one database (two to JetStream, two to the inbox of another
# database), one of them killed with kill -9 and restarted every few seconds during the load
# (100 kills in 10 minutes). A kill between the sink's confirmation and the ack redelivers;
# JetStream (Nats-Msg-Id) and the inbox must absorb it.

kill9_args() {
    case $1 in
        nats*) echo "--sink nats://127.0.0.1:$NATS_PORT?stream=CHAOS&subject_prefix=once.&create_stream=1 --topics chaos.n.>" ;;
        inbox*) echo "--sink $DST_URI&source=src --topics chaos.p.>" ;;
    esac
}
kill9_start() {
    # shellcheck disable=SC2046 # the arguments are words without spaces
    start_relay "$1" --db "$SRC_DB" $(kill9_args "$1") --lease 2s --batch 200 --poll-interval 100ms --reconnect-max 1s
}
kill9_one() {
    local names=(nats1 nats2 inbox1 inbox2) name
    name=${names[RANDOM % 4]}
    kill9_relay "$name"
    chaos_fault "relay kill -9"
    kill9_start "$name"
}

scenario_main() {
    start_postgres
    start_nats
    CHAOS_TOPICS=(chaos.n.orders chaos.n.stock chaos.p.orders chaos.p.mail)
    local r
    for r in nats1 nats2 inbox1 inbox2; do kill9_start "$r"; done
    CHAOS_COLLECTORS=(chaos_collect_inbox "chaos_collect_stream 127.0.0.1:$NATS_PORT CHAOS")
    chaos_load "$SRC_DB"
    # 100 kills over a 10-minute run; at least one every 2 s in the short one
    local period=$(( CHAOS_SECONDS / 100 )); [ $period -ge 1 ] || period=1; [ $CHAOS_LONG = 1 ] || period=2
    chaos_during_load kill9_one "$period"
    chaos_finish 180
}
