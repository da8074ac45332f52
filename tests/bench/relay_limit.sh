#!/usr/bin/env bash
# Benchmark: the relay at the limit, the WAL transport against its
# baselines, each measured in the same run, ROUNDS alternating rounds, medians.
# Results: tests/bench/results/relay_limit.txt (relay_limit-pg18.txt with ONCE_BENCH_PG=18).
#  bytes     WAL bytes per message, one message per transaction: once.send with the WAL
#            transport vs the table transport's send + claim_locked + ack, and vs a hand-written
#            outbox INSERT + DELETE.                                         target <= 0.5x
#  producer  BEGIN; INSERT order; once.send (WAL); COMMIT vs the same transaction with the
#            INSERT only (and, for context, vs once.send with the table transport and vs a
#            hand-written outbox INSERT), 1 and 16 clients, fsync on.        target >= 0.97x
#  drain     a committed backlog of BACKLOG unkeyed messages (1000 per transaction):
#            relay -> JetStream, WAL transport, vs a bare libnats publisher  target >= 0.6x
#            relay -> JetStream, WAL vs table transport                      target >= 2x
#            relay -> stdout (/dev/null), WAL, vs pg_recvlogical (pgoutput,
#            messages) of the same backlog to /dev/null                      target >= 0.8x
#            Each WAL consumer has its own slot, advanced to the backlog's start, so each
#            decodes exactly the backlog.
#  latency   commit -> sink p99 (relay, stdout sink) vs commit -> LISTEN p99 of a statement
#            writing a row and a pg_notify, at 1k and 10k msgs/s, WAL and table transport.
#            fsync=off for this part, producers at synchronous_commit=on: the WAL transport's
#            messages are decoded once the commit is flushed, and an async commit waits for the
#            WAL writer; with fsync off the flush is cheap, as LISTEN's is.  target <= 2x
#            The table transport also with once.notify_interval = 0 (a wake-up per commit
#            instead of one per 1 ms window), to show how much of its tail is the window.
#  CampusCafe in WAL mode is not measured here: saga commands and replies are keyed, and keyed
#  messages still go to the table, so such a run measures the table transport (saga.sh).
# Each figure line also says what bounded it: the CPU (percent of one core) of PostgreSQL (all
# its processes), the relay, nats-server, and the baseline tool, sampled from /proc.
# Usage: tests/bench/relay_limit.sh   (after ./scripts/build)
#   BACKLOG (default 100000)  ROUNDS (default 3)  BENCH_SECONDS (default 10: producer runs take
#   half, latency runs all of it)  BENCH_ONLY=bytes|producer|drain|latency: one part, whose lines
#   replace that part's lines in the results file.
#   A short run (a smoke check of the script, not figures): BACKLOG=5000 ROUNDS=1 BENCH_SECONDS=2
set -euo pipefail
source "$(dirname "$0")/lib.sh"
out=$(bench_results relay_limit)
RELAY="$ONCE_BUILD_DIR/daemon/once-relay"
BACKLOG=${BACKLOG:-100000}
ROUNDS=${ROUNDS:-3}
BENCH_ONLY=${BENCH_ONLY:-all}
work=$(mktemp -d); chmod 777 "$work"
pids=()
# Relays are started inside command substitutions (subshells), so their pids go to a file.
cleanup() {
    local p
    for p in "${pids[@]}" $(cat "$work/relay.pids" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true; once_cluster_stop; rm -rf "$work"
}
trap cleanup EXIT
AS=(); [ "$(id -u)" = 0 ] && AS=(setpriv --reuid=postgres --regid=postgres --init-groups --)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
die() { echo "relay_limit: $*" >&2; exit 1; }

c++ -O2 -o "$work/nats_pub_baseline" "$here_bench/tools/nats_pub_baseline.cpp" -lnats
c++ -O2 -o "$work/listen_latency" "$here_bench/tools/listen_latency.cpp" -lpq $(pkg-config --cflags libpq)

once_cluster_start shared_preload_libraries=pg_once wal_level=logical synchronous_commit=on fsync=on \
    max_wal_size=4GB checkpoint_timeout=30min
chmod 755 "$ONCE_CLUSTER_DIR"
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE bench" >/dev/null
sql() { psql -qXAt -v ON_ERROR_STOP=1 -d bench "$@"; }
sql >/dev/null <<'SQL'
CREATE EXTENSION pg_once;
CREATE TABLE orders (id bigserial PRIMARY KEY, customer int NOT NULL, total numeric NOT NULL);
-- The hand-written outbox: the same columns as once.outbox, a primary key, nothing else.
CREATE TABLE plain_outbox (LIKE once.outbox INCLUDING DEFAULTS);
ALTER TABLE plain_outbox ADD PRIMARY KEY (id), ALTER COLUMN pos SET DEFAULT gen_random_uuid(),
    ALTER COLUMN visible_at SET DEFAULT now();
CREATE TABLE plain_msgs (id bigserial PRIMARY KEY, topic text, payload jsonb);
SQL
SRC="host=$PGHOST port=$PGPORT user=postgres dbname=bench"
# One slot per WAL consumer, so that each reads the same backlog once.
for slot in relay_nats relay_stdout; do
    "${AS[@]}" "$RELAY" --db "$SRC" --create-wal-slot --wal-slot "$slot" >/dev/null
done
sql -c "SELECT pg_create_logical_replication_slot('recvlogical', 'pgoutput')" >/dev/null

NATS_PORT=$(free_port); NATS_MON=$(free_port)
nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -m "$NATS_MON" -sd "$work/nats" >"$work/nats.log" 2>&1 &
NATS_PID=$!; pids+=($NATS_PID)
once_wait_for "nats-server" 10 curl -sf "http://127.0.0.1:$NATS_MON/healthz"
NATS_URI="nats://127.0.0.1:$NATS_PORT?stream=BENCH&subject_prefix=once.&create_stream=1"

# ------------------------------------------------------------------ results and statistics
if [ "$BENCH_ONLY" = all ]; then
    : >"$out"
else
    grep -v -e "^$BENCH_ONLY:" -e "^  $BENCH_ONLY " "$out" >"$work/keep.txt" 2>/dev/null || true
    cp "$work/keep.txt" "$out"
fi
echo "# $BENCH_ONLY: $(date -u '+%F %H:%M UTC'), PostgreSQL $(sql -c 'SHOW server_version_num'), $(nproc) cores shared with other work, load average at start $(cut -d' ' -f1-3 /proc/loadavg), BACKLOG=$BACKLOG ROUNDS=$ROUNDS BENCH_SECONDS=$BENCH_SECONDS" | tee -a "$out"
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# row PART NAME TARGET "MEASURED..." "BASELINE..." [BOUND]: the median of the per-round ratios
# (measured / baseline of the same round), their range, and the raw figures.
row() {
    local part=$1 name=$2 target=$3 m=($4) b=($5) bound=${6:-} ratios=() i
    for i in "${!m[@]}"; do ratios+=("$(awk -v m="${m[$i]}" -v b="${b[$i]}" 'BEGIN { if (b > 0) printf "%.2f", m / b; else print 0 }')"); done
    local lo hi
    lo=$(printf '%s\n' "${ratios[@]}" | sort -g | head -1); hi=$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)
    printf '%s: %-64s | ratio %5s (%s-%s) | measured %s (%s) | baseline %s (%s) | target %s\n' "$part" "$name" \
        "$(median "${ratios[@]}")" "$lo" "$hi" "$(median "${m[@]}")" "${m[*]}" "$(median "${b[@]}")" "${b[*]}" "$target" | tee -a "$out"
    [ -z "$bound" ] || echo "  $part bound: $bound" | tee -a "$out"
}

# ------------------------------------------------------------------ CPU sampling
# CPU ticks of PostgreSQL (the postmaster with its exited children, plus every live child),
# and of single processes, read from /proc/<pid>/stat (fields after the command name).
TCK=$(getconf CLK_TCK)
pg_ticks() {
    local pm; pm=$(head -1 "$ONCE_CLUSTER_DIR/data/postmaster.pid")
    { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v pm="$pm" '{
        pid = $1; sub(/^[0-9]+ \(.*\) /, "")
        if (pid == pm) t += $12 + $13 + $14 + $15; else if ($2 == pm) t += $12 + $13
    } END { print t + 0 }'
}
pid_ticks() { [ -r "/proc/$1/stat" ] && sed 's/^[0-9]* (.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }' || echo 0; }
# cpu_mark: remember the clock and the ticks; cpu_since [LABEL TICKS]...: "postgres N%, relay N%,
# nats-server N%, LABEL N%" of one core since the mark (RELAY_PID: the relay, if any).
cpu_mark() { M_T=$(date +%s.%N); M_PG=$(pg_ticks); M_RELAY=$(pid_ticks "${RELAY_PID:-0}"); M_NATS=$(pid_ticks "$NATS_PID"); }
cpu_since() {
    local t pg relay nats
    t=$(date +%s.%N); pg=$(pg_ticks); relay=$(pid_ticks "${RELAY_PID:-0}"); nats=$(pid_ticks "$NATS_PID")
    awk -v w="$(awk -v a="$M_T" -v b="$t" 'BEGIN { print b - a }')" -v k="$TCK" \
        -v pg=$((pg - M_PG)) -v relay=$((relay - M_RELAY)) -v nats=$((nats - M_NATS)) -v extra="$*" 'BEGIN {
        printf "postgres %d%%, relay %d%%, nats-server %d%%", 100 * pg / k / w, 100 * relay / k / w, 100 * nats / k / w
        n = split(extra, e, " "); for (i = 1; i + 1 <= n; i += 2) printf ", %s %d%%", e[i], 100 * e[i + 1] / w
    }'
}

relay_start() {   # NAME SINK [args]: starts once-relay; RELAY_PID, RELAY_METRICS
    local name=$1 sink=$2; shift 2
    local mp=${RELAY_PORT:-}; [ -n "$mp" ] || mp=$(free_port)
    "${AS[@]}" "$RELAY" --db "$SRC" --sink "$sink" --name "$name" --metrics "127.0.0.1:$mp" --maintenance off \
        --log-level warn "$@" >"${RELAY_STDOUT:-/dev/null}" 2>>"$work/$name.log" &
    RELAY_PID=$!; echo "$RELAY_PID" >>"$work/relay.pids"; RELAY_METRICS="http://127.0.0.1:$mp/metrics"
}
acked() { { curl -sf "$RELAY_METRICS" 2>/dev/null || true; } | awk '$1 == "once_relay_acked_total" { print $2 }'; }
relay_stop() { kill -TERM "$RELAY_PID" 2>/dev/null || true; wait "$RELAY_PID" 2>/dev/null || true; RELAY_PID=; }
wait_acked() {   # N SECONDS: the relay's own count (count(*) on the outbox would take CPU from it);
    local d=$((SECONDS + $2)) a   # FIRST_ACK_T: when the first acknowledgement was seen
    FIRST_ACK_T=
    while :; do
        a=$(acked)
        [ -n "$FIRST_ACK_T" ] || [ "${a:-0}" = 0 ] || FIRST_ACK_T=$(date +%s.%N)
        [ "${a:-0}" -ge "$1" ] 2>/dev/null && return 0
        [ $SECONDS -lt $d ] || die "relay acknowledged ${a:-0} of $1 within $2 s: $(tail -5 "$work"/*.log)"
        sleep 0.02
    done
}
slot_idle() { [ "$(sql -c "SELECT count(*) FROM pg_replication_slots WHERE active")" = 0 ]; }
# Moves every slot to the current end of the WAL (decoding what lies before it, untimed), so
# that a timed consumer decodes only what is written after.
advance_slots() {
    once_wait_for "slots released" 30 slot_idle
    sql -c "SELECT count(pg_replication_slot_advance(slot_name, pg_current_wal_lsn())) FROM pg_replication_slots" >/dev/null
}

# ------------------------------------------------------------------ bytes
payload='{"order": 1, "customer": 2, "total": "42.50"}'
if [ "$BENCH_ONLY" = all ] || [ "$BENCH_ONLY" = bytes ]; then
n_bytes=10000
for i in $(seq $n_bytes); do echo "SELECT once.send('order.created', '$payload');"; done >"$work/sends.sql"
for i in $(seq $n_bytes); do echo "INSERT INTO plain_outbox (id, topic, payload) VALUES (gen_random_uuid(), 'order.created', '$payload');"; done >"$work/inserts.sql"
wal_bytes() {   # wal | table | plain: WAL bytes per message, each message its own transaction
    sql -c "TRUNCATE once.outbox, plain_outbox" -c CHECKPOINT >/dev/null
    local s; s=$(sql -c "SELECT pg_current_wal_lsn()")
    case $1 in
        wal|table) PGOPTIONS="-c once.transport=$1 -c synchronous_commit=off" sql -f "$work/sends.sql" >/dev/null
            sql -c "DO \$\$ BEGIN WHILE once.ack('w', ARRAY(SELECT id FROM once.claim_locked('w', 100))) > 0 LOOP END LOOP; END \$\$" >/dev/null ;;
        plain) PGOPTIONS="-c synchronous_commit=off" sql -f "$work/inserts.sql" >/dev/null
            sql -c "DO \$\$ BEGIN LOOP EXIT WHEN NOT EXISTS (SELECT 1 FROM plain_outbox);
                WITH c AS (SELECT id FROM plain_outbox ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
                DELETE FROM plain_outbox o USING c WHERE o.id = c.id; END LOOP; END \$\$" >/dev/null ;;
    esac
    [ "$(sql -c "SELECT count(*) FROM once.outbox")" = 0 ] || die "bytes: the outbox was not drained"
    sql -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$s') / $n_bytes)"
}
b_wal=(); b_table=(); b_plain=()
for ((r = 1; r <= ROUNDS; r++)); do
    b_wal+=("$(wal_bytes wal)"); b_table+=("$(wal_bytes table)"); b_plain+=("$(wal_bytes plain)")
done
advance_slots
row bytes "WAL bytes/msg: once.send (WAL) vs hand-written INSERT+DELETE" "<= 0.5" "${b_wal[*]}" "${b_plain[*]}" \
    "deterministic (one transaction per message; after a checkpoint)"
row bytes "WAL bytes/msg: once.send (WAL) vs table transport send+ack" "report" "${b_wal[*]}" "${b_table[*]}"
fi

# ------------------------------------------------------------------ producer
if [ "$BENCH_ONLY" = all ] || [ "$BENCH_ONLY" = producer ]; then
# The transport is the session's setting (PGOPTIONS), as ALTER DATABASE would set it, so that
# every variant runs the same statements but for the enqueue.
cat >"$work/p_send.sql" <<SQL
\\set c random(1, 100000)
BEGIN;
INSERT INTO orders (customer, total) VALUES (:c, 42.50);
SELECT once.send('order.created', '$payload');
COMMIT;
SQL
cp "$work/p_send.sql" "$work/p_wal.sql"; cp "$work/p_send.sql" "$work/p_table.sql"
cat >"$work/p_bare.sql" <<SQL
\\set c random(1, 100000)
BEGIN;
INSERT INTO orders (customer, total) VALUES (:c, 42.50);
COMMIT;
SQL
cat >"$work/p_plain.sql" <<SQL
\\set c random(1, 100000)
BEGIN;
INSERT INTO orders (customer, total) VALUES (:c, 42.50);
INSERT INTO plain_outbox (id, topic, payload) VALUES (gen_random_uuid(), 'order.created', '$payload');
COMMIT;
SQL
producer_tps() {   # CLIENTS VARIANT
    sql -c "TRUNCATE orders, plain_outbox, once.outbox" -c CHECKPOINT >/dev/null
    cpu_mark
    local tr=wal; [ "$2" = table ] && tr=table
    local tps; tps=$(PGOPTIONS="-c once.transport=$tr" BENCH_SECONDS=$(((BENCH_SECONDS + 1) / 2)) bench_tps "$1" "$work/p_$2.sql")
    echo "$tps"; echo "$2 $1: $(cpu_since)" >>"$work/producer_cpu.txt"
}
for clients in 1 16; do
    p_wal=(); p_table=(); p_bare=(); p_plain=()
    for ((r = 1; r <= ROUNDS; r++)); do
        order=(bare wal plain table); [ $((r % 2)) = 0 ] && order=(table plain wal bare)
        for v in "${order[@]}"; do eval "p_$v+=(\"\$(producer_tps $clients $v)\")"; done
    done
    bound=$(grep "^wal $clients:" "$work/producer_cpu.txt" | tail -1 | cut -d: -f2-)
    row producer "tx INSERT+once.send (WAL) vs INSERT only, $clients client(s), tps" ">= 0.97" "${p_wal[*]}" "${p_bare[*]}" \
        "WAL runs: ${bound# } (fsync on: commits wait for the disk's flush)"
    row producer "tx INSERT+once.send (WAL) vs INSERT+hand-written outbox INSERT, $clients" "report" "${p_wal[*]}" "${p_plain[*]}"
    row producer "tx INSERT+once.send (WAL) vs once.send (table transport), $clients" "report" "${p_wal[*]}" "${p_table[*]}"
done
advance_slots
fi

# ------------------------------------------------------------------ drain
if [ "$BENCH_ONLY" = all ] || [ "$BENCH_ONLY" = drain ]; then
fill() {   # table | wal: BACKLOG unkeyed messages, 1000 per transaction
    sql -c "TRUNCATE once.outbox" >/dev/null
    for ((b = 0; b < BACKLOG / 1000; b++)); do
        echo "SELECT count(once.send('bench.drain', jsonb_build_object('n', n, 'item', 'latte'))) FROM generate_series(1, 1000) n;"
    done | PGOPTIONS="-c once.transport=$1" sql >/dev/null
}
relay_drain() {   # NAME SINK [relay args]: msgs/s from start to the BACKLOG-th acknowledgement
    local name=$1 t0 t1 port; shift
    # The metrics port is picked before the clock starts: python3's start-up (0.1-0.35 s on a
    # loaded machine) is not the relay's, and the baselines' timed runs start no python.
    port=$(free_port)
    t0=$(date +%s.%N); cpu_mark
    RELAY_PORT=$port relay_start "$name" "$@" --batch 1000 --max-in-flight 1024 --poll-interval 100ms
    wait_acked "$BACKLOG" 600
    t1=$(date +%s.%N)
    echo "$name: $(cpu_since), first ack after $(awk -v s="$t0" -v f="$FIRST_ACK_T" 'BEGIN { printf "%.2f", f - s }') of $(awk -v s="$t0" -v e="$t1" 'BEGIN { printf "%.2f", e - s }') s" >>"$work/drain_cpu.txt"
    relay_stop
    awk -v n="$BACKLOG" -v s="$t0" -v e="$t1" 'BEGIN { printf "%d", n / (e - s) }'
}
timed() {   # LABEL CMD...: runs CMD, prints msgs/s of BACKLOG, records the CPU with CMD's own
    local label=$1 t0 t1 tf="$work/time.txt"; shift
    t0=$(date +%s.%N); cpu_mark
    { TIMEFORMAT='%U %S'; time "$@" >/dev/null; } 2>"$tf"
    t1=$(date +%s.%N)
    echo "$label: $(cpu_since "$label" "$(awk '{ print $1 + $2 }' "$tf")")" >>"$work/drain_cpu.txt"
    awk -v n="$BACKLOG" -v s="$t0" -v e="$t1" 'BEGIN { printf "%d", n / (e - s) }'
}
recvlogical() {   # ENDPOS: decode the slot to ENDPOS, output to /dev/null
    pg_recvlogical -d "$SRC" --slot recvlogical --start -E "$1" -F 0 -f /dev/null \
        -o proto_version=1 -o publication_names=once_outbox -o messages=true
}
d_table=(); d_wal=(); d_base=(); d_stdout=(); d_decode=()
for ((r = 1; r <= ROUNDS; r++)); do
    steps=(table wal base); [ $((r % 2)) = 0 ] && steps=(base wal table)
    for s in "${steps[@]}"; do
        case $s in
            table) fill table; d_table+=("$(relay_drain "table-nats-$r" "$NATS_URI" --transport table)")
                   [ "$(sql -c "SELECT count(*) FROM once.outbox")" = 0 ] || die "the table drain left messages" ;;
            base)  d_base+=("$(timed "libnats-$r" "$work/nats_pub_baseline" "nats://127.0.0.1:$NATS_PORT" BENCH once.baseline "$BACKLOG" 1024 "r$r-")")
                   ;;
            wal)   advance_slots; fill wal
                   endpos=$(sql -c "SELECT pg_current_wal_lsn()")
                   d_wal+=("$(relay_drain "wal-nats-$r" "$NATS_URI" --transport wal --wal-slot relay_nats)")
                   # Decoding alone and the relay to a free sink, in alternating order.
                   if [ $((r % 2)) = 1 ]; then
                       d_decode+=("$(timed "pg_recvlogical-$r" recvlogical "$endpos")")
                       d_stdout+=("$(relay_drain "wal-stdout-$r" stdout: --transport wal --wal-slot relay_stdout)")
                   else
                       d_stdout+=("$(relay_drain "wal-stdout-$r" stdout: --transport wal --wal-slot relay_stdout)")
                       d_decode+=("$(timed "pg_recvlogical-$r" recvlogical "$endpos")")
                   fi
                   ;;
        esac
    done
done
cpu_of() { grep "^$1-" "$work/drain_cpu.txt" | sed "s/^$1-/round /" | paste -sd ';' | sed 's/;/; /g'; }
row drain "drain $BACKLOG to JetStream: relay (WAL) vs bare libnats publisher, msgs/s" ">= 0.6" "${d_wal[*]}" "${d_base[*]}" \
    "relay (WAL): $(cpu_of wal-nats) | libnats: $(cpu_of libnats)"
row drain "drain $BACKLOG to JetStream: relay, WAL vs table transport, msgs/s" ">= 2" "${d_wal[*]}" "${d_table[*]}" \
    "relay (table): $(cpu_of table-nats)"
row drain "drain $BACKLOG to stdout: relay (WAL) vs pg_recvlogical alone, msgs/s" ">= 0.8" "${d_stdout[*]}" "${d_decode[*]}" \
    "relay (WAL, stdout): $(cpu_of wal-stdout) | pg_recvlogical: $(cpu_of pg_recvlogical)"
row drain "drain $BACKLOG: relay to JetStream vs relay to stdout, WAL transport" "report" "${d_wal[*]}" "${d_stdout[*]}"
fi

# ------------------------------------------------------------------ latency
if [ "$BENCH_ONLY" = all ] || [ "$BENCH_ONLY" = latency ]; then
sql -c "ALTER SYSTEM SET fsync = off" -c "SELECT pg_reload_conf()" >/dev/null
cat >"$work/lat_send.sql" <<'SQL'
SELECT once.send('bench.lat', jsonb_build_object('t', extract(epoch FROM clock_timestamp())));
SQL
# The baseline writes its row and notifies in one autocommitted statement, one round trip like
# the once.send it is compared with (as BEGIN; ...; COMMIT on a loaded machine it reached only a
# third of the asked rate, and its p99 was then taken at a lower load).
cat >"$work/lat_notify.sql" <<'SQL'
WITH w AS (INSERT INTO plain_msgs (topic, payload) VALUES ('bench.lat', '{}') RETURNING id)
SELECT pg_notify('bench_lat', extract(epoch FROM clock_timestamp())::text) FROM w;
SQL
listen_p99() {   # RATE -> "p50 p99"
    cpu_mark
    "$work/listen_latency" "$SRC" bench_lat $((BENCH_SECONDS + 2)) >"$work/listen.txt" &
    local lp=$!
    sleep 0.5   # (the listener's LISTEN must be in place before the first commit)
    local sent
    sent=$(pgbench -n -M prepared -R "$1" -T "$BENCH_SECONDS" -c 4 -j 4 -f "$work/lat_notify.sql" bench 2>&1 |
        awk '/ processed: / { print $NF }' | cut -d/ -f1)
    wait $lp
    echo "listen-$1: $(cpu_since), $((${sent:-0} / BENCH_SECONDS))/s achieved" >>"$work/lat_cpu.txt"
    tail -1 "$work/listen.txt" | awk '{ print $2, $3 }'
}
stream_active() { curl -sf "$RELAY_METRICS" | grep -qx 'once_wal_stream_active 1'; }
relay_p99() {   # RATE TRANSPORT -> "p50 p99" (TRANSPORT table0: the table with once.notify_interval = 0)
    local rate=$1 tr=$2
    if [ "$tr" = table0 ]; then
        sql -c "ALTER SYSTEM SET once.notify_interval = 0" -c "SELECT pg_reload_conf()" >/dev/null
        relay_p99 "$rate" table
        sql -c "ALTER SYSTEM RESET once.notify_interval" -c "SELECT pg_reload_conf()" >/dev/null
        return
    fi
    local args=(--transport "$2")
    [ "$tr" = wal ] && { advance_slots; args+=(--wal-slot relay_stdout); }
    sql -c "TRUNCATE once.outbox" >/dev/null
    rm -f "$work/lat.fifo"; mkfifo "$work/lat.fifo"; chmod 666 "$work/lat.fifo"
    python3 "$here_bench/tools/stdout_latency.py" <"$work/lat.fifo" >"$work/lat.txt" &
    local reader=$!
    RELAY_STDOUT="$work/lat.fifo" relay_start "lat-$tr" stdout: "${args[@]}"
    once_wait_for "relay metrics" 30 curl -sf "$RELAY_METRICS"
    # Steady state only, like the LISTEN baseline's listener: the producers start once a first
    # message went through. An open stream is not enough: the walsender first decodes the WAL
    # between the slot's restart position and the backlog (here the drain part's), and the
    # messages committed meanwhile wait for it; wal_tail.sh showed that wait as the 100-500 ms
    # p99 of earlier 10k/s runs. What a restart costs is measured by wal_drain.sh.
    if [ "$tr" = wal ]; then once_wait_for "WAL stream open" 30 stream_active; fi
    PGOPTIONS="-c once.transport=$tr" sql -c "SELECT once.send('bench.warm', '{}')" >/dev/null
    wait_acked 1 60
    cpu_mark
    local sent
    sent=$(PGOPTIONS="-c once.transport=$tr" pgbench -n -M prepared -R "$rate" -T "$BENCH_SECONDS" -c 4 -j 4 -f "$work/lat_send.sql" bench 2>&1 |
        awk '/ processed: / { print $NF }' | cut -d/ -f1)
    wait_acked $((${sent:-0} + 1)) 60
    echo "$tr-$rate: $(cpu_since), $((${sent:-0} / BENCH_SECONDS))/s achieved" >>"$work/lat_cpu.txt"
    relay_stop; wait "$reader" || true
    awk '{ print $2, $3 }' "$work/lat.txt"
}
for rate in 1000 10000; do
    l_listen=(); l_wal=(); l_table=(); l_table0=(); l_listen50=(); l_wal50=(); l_table50=(); l_table050=()
    for ((r = 1; r <= ROUNDS; r++)); do
        steps=(listen wal table table0); [ $((r % 2)) = 0 ] && steps=(table0 table wal listen)
        for s in "${steps[@]}"; do
            case $s in
                listen) read -r p50 p99 < <(listen_p99 "$rate") || die "latency: no LISTEN figures" ;;
                *) read -r p50 p99 < <(relay_p99 "$rate" "$s") || die "latency: no $s figures: $(tail -3 "$work/lat-$s.log")" ;;
            esac
            eval "l_$s+=($p99); l_${s}50+=($p50)"
        done
    done
    row latency "commit->sink p99 ms at $rate/s, relay (WAL) vs commit->LISTEN p99" "<= 2 (lower is better)" "${l_wal[*]}" "${l_listen[*]}" \
        "p50 WAL ${l_wal50[*]}, LISTEN ${l_listen50[*]} ms; last WAL run: $(grep "^wal-$rate:" "$work/lat_cpu.txt" | tail -1 | cut -d: -f2-); last LISTEN run: $(grep "^listen-$rate:" "$work/lat_cpu.txt" | tail -1 | cut -d: -f2-)"
    row latency "commit->sink p99 ms at $rate/s, relay (table) vs commit->LISTEN p99" "report" "${l_table[*]}" "${l_listen[*]}" \
        "p50 table ${l_table50[*]} ms; last table run: $(grep "^table-$rate:" "$work/lat_cpu.txt" | tail -1 | cut -d: -f2-)"
    row latency "commit->sink p99 ms at $rate/s, relay (table, notify_interval 0) vs commit->LISTEN p99" "report" "${l_table0[*]}" "${l_listen[*]}" \
        "p50 table (notify_interval 0) ${l_table050[*]} ms"
done
sql -c "ALTER SYSTEM RESET fsync" -c "SELECT pg_reload_conf()" >/dev/null
fi
echo "# load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
echo "results in $out"
