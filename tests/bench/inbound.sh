#!/usr/bin/env bash
# Benchmark: the inbound relay (once-relay --source) against a hand-written JetStream consumer,
# measured in the same run, ROUNDS alternating rounds, medians.
# Results: tests/bench/results/inbound.txt (inbound-pg18.txt with ONCE_BENCH_PG=18).
#  A stream holds COUNT messages over KEYS keys (default 100) (published by a bare libnats publisher with
#  Nats-Msg-Id). Each round, each consumer drains all of them with a durable pull consumer of
#  its own into the same database:
#   relay     once-relay --source: once.deliver + a handler inserting one row, several
#             messages per transaction, ack after the commit, per-key order
#   baseline  tools/nats_pull_consumer_baseline.cpp: batches of 500, one statement per batch
#             (INSERT ... ON CONFLICT DO NOTHING into a table of seen ids + the handler's
#             insert for the new ones), then an ack per message; no order, no retries
#  msgs/s from the start of the consumer to the last message's effect.   target >= 0.8x
#  And the database side alone, without NATS or a relay: COUNT once.deliver calls in one
#  statement vs the baseline's one set-based statement for COUNT messages (report): the
#  bound the per-message once.deliver puts on the relay.
# Usage: tests/bench/inbound.sh   (after ./scripts/build)   COUNT (default 20000) KEYS (default 100) ROUNDS (default 3)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
out=$(bench_results inbound)
RELAY="$ONCE_BUILD_DIR/daemon/once-relay"
COUNT=${COUNT:-20000}
KEYS=${KEYS:-100}
ROUNDS=${ROUNDS:-3}
work=$(mktemp -d); chmod 777 "$work"
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    once_cluster_stop
    rm -rf "$work"
}
trap cleanup EXIT
as_user=()
[ "$(id -u)" = 0 ] && as_user=(setpriv --reuid=postgres --regid=postgres --init-groups --)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

c++ -O2 -o "$work/nats_pub_baseline" "$here_bench/tools/nats_pub_baseline.cpp" -lnats
c++ -O2 -o "$work/pull_baseline" "$here_bench/tools/nats_pull_consumer_baseline.cpp" -lnats -lpq $(pkg-config --cflags libpq)

once_cluster_start
chmod 755 "$ONCE_CLUSTER_DIR"
NATS_PORT=$(free_port); NATS_MON=$(free_port)
nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -m "$NATS_MON" -sd "$work/nats" >"$work/nats.log" 2>&1 &
pids+=($!)
once_wait_for "nats-server" 20 curl -sf "http://127.0.0.1:$NATS_MON/healthz?js-enabled-only=true" >/dev/null
psql -X -q -d postgres -c "CREATE DATABASE bench"
psql -X -q -v ON_ERROR_STOP=1 -d bench >/dev/null <<'SQL'
CREATE EXTENSION pg_once;
CREATE TABLE effects (id uuid, n int);
CREATE FUNCTION on_message(msg once.inbound) RETURNS void LANGUAGE sql AS
  $$ INSERT INTO public.effects VALUES (msg.message_id::uuid, (msg.payload->>'n')::int) $$;
SELECT once.subscribe('bench.>', 'on_message(once.inbound)'::regprocedure);
CREATE TABLE seen (id text PRIMARY KEY);
CREATE TABLE effects_base (id text, n int);
SQL
DB="host=$PGHOST port=$PGPORT user=postgres dbname=bench"
# The stream: COUNT messages, KEYS keys (Once-Key is what the outbound relay sets).
python3 - "$NATS_PORT" <<'PY'
import json, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
f = s.makefile("rb"); f.readline()
cfg = json.dumps({"name": "BENCH", "subjects": ["bench.>"], "storage": "file"}).encode()
s.sendall(b'CONNECT {"verbose":false,"headers":true}\r\nSUB _INBOX.b 1\r\nPUB $JS.API.STREAM.CREATE.BENCH _INBOX.b %d\r\n%s\r\n' % (len(cfg), cfg))
while not f.readline().startswith(b"MSG"): pass
print(f.readline().decode().strip()[:80])
PY
python3 - "$NATS_PORT" "$COUNT" "$KEYS" <<'PY'
import socket, sys, uuid
port, count, keys = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb"); f.readline()
s.sendall(b'CONNECT {"verbose":false,"headers":true}\r\nSUB _INBOX.p 1\r\n')
buf = []
for i in range(count):
    hdr = ("NATS/1.0\r\nNats-Msg-Id: %s\r\nOnce-Key: k%d\r\nOnce-Topic: bench.order\r\n\r\n" % (uuid.uuid4(), i % keys)).encode()
    body = b'{"n": %d, "item": "latte"}' % i
    buf.append(b"HPUB bench.order _INBOX.p %d %d\r\n%s%s\r\n" % (len(hdr), len(hdr) + len(body), hdr, body))
    if len(buf) == 1000:
        s.sendall(b"".join(buf)); buf = []
s.sendall(b"".join(buf))
acks = 0
while acks < count:
    line = f.readline()
    if line.startswith(b"MSG"):
        f.readline(); acks += 1
    elif line.startswith(b"PING"):
        s.sendall(b"PONG\r\n")
print("published", acks)
PY

rows() { psql -X -At -d bench -c "SELECT count(*) FROM $1"; }
# msgs/s of one drain: from the consumer's start to COUNT effects in TABLE.
run_relay() {
    local r=$1 t0 t1
    psql -X -q -d bench -c "TRUNCATE effects, once.inbox"
    t0=$(date +%s.%N)
    "${as_user[@]}" "$RELAY" --db "$DB" --name "bench-$r" --log-level warn --max-in-flight 1000 \
        --source "nats://127.0.0.1:$NATS_PORT?stream=BENCH&consumer=relay$r&source=bench$r&fetch=500" >>"$work/relay.log" 2>&1 &
    local pid=$!
    pids+=($pid)
    until [ "$(rows effects)" -ge "$COUNT" ]; do sleep 0.05; done
    t1=$(date +%s.%N)
    kill -TERM $pid; wait $pid 2>/dev/null || true
    awk -v a="$t0" -v b="$t1" -v n="$COUNT" 'BEGIN { printf "%d", n / (b - a) }'
}
run_base() {
    local r=$1
    psql -X -q -d bench -c "TRUNCATE effects_base, seen"
    "$work/pull_baseline" "nats://127.0.0.1:$NATS_PORT" BENCH "base$r" "$DB" "$COUNT" 500
}
relay_rates=() base_rates=()
for ((r = 1; r <= ROUNDS; r++)); do
    relay_rates+=("$(run_relay $r)")
    base_rates+=("$(run_base $r)")
    echo "round $r: relay ${relay_rates[-1]} msgs/s, hand-written consumer ${base_rates[-1]} msgs/s"
done
[ "$(psql -X -At -d bench -c "SELECT count(DISTINCT id) = count(*) FROM effects")" = t ] || { echo "duplicate effects" >&2; exit 1; }
# The database side alone: msgs/s of one statement.
statement_rate() {
    local ms
    ms=$(psql -X -d bench -c '\timing on' -c "$1" | awk '/^Time:/ {print $2}')
    awk -v ms="$ms" -v n="$COUNT" 'BEGIN { printf "%d", n / (ms / 1000) }'
}
deliver_rates=() statement_rates=()
for ((r = 1; r <= ROUNDS; r++)); do
    psql -X -q -d bench -c "TRUNCATE effects, effects_base, seen, once.inbox"
    deliver_rates+=("$(statement_rate "SELECT count(once.deliver('alone', gen_random_uuid(), 'bench.order', jsonb_build_object('n', g)))
                                       FROM generate_series(1, $COUNT) g")")
    statement_rates+=("$(statement_rate "WITH batch AS (SELECT gen_random_uuid()::text AS id, jsonb_build_object('n', g) AS payload
                                                           FROM generate_series(1, $COUNT) g),
                                              fresh AS (INSERT INTO seen (id) SELECT id FROM batch ON CONFLICT DO NOTHING RETURNING id)
                                         INSERT INTO effects_base (id, n) SELECT b.id, (b.payload->>'n')::int FROM batch b JOIN fresh USING (id)")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
: >"$out"
echo "# $(date -u +%F) PostgreSQL $(psql -X -At -d bench -c 'SHOW server_version'), COUNT=$COUNT KEYS=$KEYS ROUNDS=$ROUNDS, load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
bench_result "$out" "inbound relay vs hand-written pull consumer (msgs/s)" 1 "$(median "${relay_rates[@]}")" "$(median "${base_rates[@]}")" ">= 0.8x"
bench_result "$out" "database side: once.deliver x COUNT vs one statement" 1 "$(median "${deliver_rates[@]}")" "$(median "${statement_rates[@]}")" "report"
