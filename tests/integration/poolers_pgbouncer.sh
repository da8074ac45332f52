#!/usr/bin/env bash
# pg_once through a real PgBouncer (Debian's package), on loopback, with its own ini and auth
# file, in front of the test's throwaway PostgreSQL. One PgBouncer serves each database twice:
# src_tx/dst_tx in pool_mode=transaction (pools of 4 server connections for 8 clients, so
# clients keep changing server session) and src_session in pool_mode=session.
#  1. Producers in transaction mode with the documented client settings (docs/poolers.md):
#     psycopg 3 with prepare_threshold=None and node-postgres without named queries. Concurrent
#     duplicates of once.run (the command runs once, every duplicate gets the stored response),
#     once.send, once.receive and once.deliver; then the databases are checked. Controls: the
#     same traffic with client-side prepared statements fails through this pool.
#  2. once-relay pointed at the transaction pool (locked and leased claim modes) stops at once
#     with one line (exit status 78), without a retry loop.
#  3. once-relay through the session pool delivers every message the producers sent.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
ROUNDS=${POOLERS_ROUNDS:-12}
CLIENTS=8
# Debian installs it in /usr/sbin, which an unprivileged user's PATH may lack.
PGBOUNCER=$(PATH=$PATH:/usr/sbin command -v pgbouncer) || fail "pgbouncer is needed (scripts/setup)"
command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed (scripts/setup)"
python=
for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import psycopg' 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || fail "no python3 with psycopg 3 (Debian python3-psycopg, scripts/setup)"
node_example=$(cd "$ONCE_SOURCE_DIR/examples/clients/node" && pwd)
(cd "$node_example" && npm ci --no-audit --no-fund --loglevel=error) >"$T/npm.log" 2>&1 || fail "npm ci: $(tail -5 "$T/npm.log")"

start_postgres
psql_src -c "CREATE TABLE pool_charges (id bigserial PRIMARY KEY, tag text, round int);
             CREATE TABLE pool_effects (tag text, event text)"

# PgBouncer refuses to run as root: like the relay, it runs as postgres then.
PGB_PORT=$(free_port)
mkdir -p "$T/pgbouncer"
echo '"postgres" ""' >"$T/pgbouncer/userlist.txt"
cat >"$T/pgbouncer/pgbouncer.ini" <<EOF
[databases]
src_tx = host=$PGHOST port=$PGPORT dbname=src pool_mode=transaction pool_size=4
dst_tx = host=$PGHOST port=$PGPORT dbname=dst pool_mode=transaction pool_size=4
src_session = host=$PGHOST port=$PGPORT dbname=src pool_mode=session pool_size=20
roles_tx = host=$PGHOST port=$PGPORT dbname=src pool_mode=transaction pool_size=1

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = trust
auth_file = $T/pgbouncer/userlist.txt
max_client_conn = 200
logfile = $T/pgbouncer/pgbouncer.log
pidfile = $T/pgbouncer/pgbouncer.pid
EOF
chmod -R a+rwX "$T/pgbouncer"
as_relay_user "$PGBOUNCER" "$T/pgbouncer/pgbouncer.ini" >"$T/pgbouncer/stdout.log" 2>&1 &
BG_PIDS+=($!)
pgb_up() { psql -X -At -h 127.0.0.1 -p "$PGB_PORT" -d src_tx -c "SELECT 1"; }
once_wait_for "pgbouncer" 20 pgb_up || fail "pgbouncer did not start: $(tail -5 "$T/pgbouncer/pgbouncer.log")"
say "$("$PGBOUNCER" --version | head -n 1) on 127.0.0.1:$PGB_PORT"
TX_SRC="host=127.0.0.1 port=$PGB_PORT dbname=src_tx user=postgres"
TX_DST="host=127.0.0.1 port=$PGB_PORT dbname=dst_tx user=postgres"
TX_SRC_URL="postgresql://postgres@127.0.0.1:$PGB_PORT/src_tx"
TX_DST_URL="postgresql://postgres@127.0.0.1:$PGB_PORT/dst_tx"

say "producers through the transaction pool: psycopg 3 (prepare_threshold=None), $ROUNDS rounds x $CLIENTS clients"
"$python" "$RELAY_LIB/pooled_producer.py" "$TX_SRC" "$TX_DST" py "$ROUNDS" "$CLIENTS" >"$T/py.json" ||
    fail "psycopg producers: $(cat "$T/py.json")"
say "  $(cat "$T/py.json")"
say "producers through the transaction pool: node-postgres (no named queries)"
NODE_PATH="$node_example/node_modules" node "$RELAY_LIB/pooled_producer.js" "$TX_SRC_URL" "$TX_DST_URL" js "$ROUNDS" "$CLIENTS" \
    >"$T/js.json" || fail "node-postgres producers: $(cat "$T/js.json")"
say "  $(cat "$T/js.json")"

say "the databases afterwards"
for tag in py js; do
    # one charge per key, and every caller's key stored with that charge as its response
    [ "$(psql_src -c "SELECT count(*) FROM pool_charges WHERE tag = '$tag'")" = "$ROUNDS" ] ||
        fail "$tag: $(psql_src -c "SELECT count(*) FROM pool_charges WHERE tag = '$tag'") charges for $ROUNDS keys"
    [ "$(psql_src -c "SELECT count(*) FROM (SELECT round FROM pool_charges WHERE tag = '$tag' GROUP BY round HAVING count(*) > 1) d")" = 0 ] ||
        fail "$tag: a command ran twice"
    [ "$(psql_src -c "SELECT count(*) FROM pool_effects WHERE tag = '$tag'")" = "$ROUNDS" ] ||
        fail "$tag: $(psql_src -c "SELECT count(*) FROM pool_effects WHERE tag = '$tag'") inbox effects for $ROUNDS events"
    [ "$(psql_src -c "SELECT count(*) FROM once.outbox WHERE topic = 'pool.$tag'")" = $((ROUNDS * CLIENTS)) ] ||
        fail "$tag: $(psql_src -c "SELECT count(*) FROM once.outbox WHERE topic = 'pool.$tag'") messages in the outbox, sent $((ROUNDS * CLIENTS))"
    [ "$(psql_dst -c "SELECT count(*) FROM relay_received WHERE key LIKE '$tag-%'")" = "$ROUNDS" ] ||
        fail "$tag: $(psql_dst -c "SELECT count(*) FROM relay_received WHERE key LIKE '$tag-%'") handler runs for $ROUNDS delivered messages"
done

say "controls: client-side prepared statements through the same pool"
"$python" "$RELAY_LIB/pooled_producer.py" --control "$TX_SRC" >"$T/py-control.json"
NODE_PATH="$node_example/node_modules" node "$RELAY_LIB/pooled_producer.js" --control "$TX_SRC_URL" >"$T/js-control.json"
say "  $(cat "$T/py-control.json")"
say "  $(cat "$T/js-control.json")"
[ "$(jq .failed "$T/py-control.json")" -gt 0 ] || fail "psycopg with prepare_threshold=0 never failed: is the pool in transaction mode?"
[ "$(jq .failed "$T/js-control.json")" -gt 0 ] || fail "node-postgres named queries never failed: is the pool in transaction mode?"

say "roles through the transaction pool: SET LOCAL ROLE stays in its transaction, SET ROLE leaks"
psql_src -c "CREATE ROLE pool_payments NOLOGIN; GRANT once_producer TO pool_payments;
             GRANT SELECT, INSERT ON pool_charges TO pool_payments; GRANT USAGE ON SEQUENCE pool_charges_id_seq TO pool_payments"
ROLES="host=127.0.0.1 port=$PGB_PORT dbname=roles_tx user=postgres"   # one server connection
psql -X -q -v ON_ERROR_STOP=1 -d "$ROLES" -c "BEGIN" -c "SET LOCAL ROLE pool_payments" \
    -c "SELECT once.run('pool', 'roles-1', '{\"tag\": \"roles\", \"round\": 1}', \$\$
          INSERT INTO pool_charges (tag, round) VALUES (\$1->>'tag', (\$1->>'round')::int) RETURNING id \$\$)" \
    -c "COMMIT" >/dev/null
[ "$(psql_src -c "SELECT owner::regrole FROM once.keys WHERE scope = 'pool' AND key = 'roles-1'")" = pool_payments ] ||
    fail "the key's owner is not the role set with SET LOCAL ROLE"
[ "$(psql -X -At -d "$ROLES" -c "SELECT current_user")" = postgres ] || fail "SET LOCAL ROLE outlived its transaction"
psql -X -q -d "$ROLES" -c "SET ROLE pool_payments"
[ "$(psql -X -At -d "$ROLES" -c "SELECT current_user")" = pool_payments ] ||
    fail "SET ROLE did not reach the next client of the pool (docs/poolers.md says it does)"
psql -X -q -d "$ROLES" -c "RESET ROLE"

start_http_receiver pool
for mode in locked leased; do
    say "once-relay through the transaction pool, claim mode $mode: stops with one line"
    start_relay "tx-$mode" --db "$TX_SRC" --sink "$HTTP_URL" --claim-mode "$mode" --poll-interval 100ms
    pid=$(relay_pid "tx-$mode")
    once_wait_for "relay tx-$mode to exit" 30 bash -c "! kill -0 $pid 2>/dev/null" || fail "relay tx-$mode still running"
    rc=0; wait "$pid" || rc=$?
    forget_pid "$pid"
    [ "$rc" = 78 ] || fail "relay tx-$mode exited with $rc, expected 78"
    log="$T/relay-tx-$mode.log"
    [ "$(grep -c "connect it directly or through a session pool" "$log")" = 1 ] || fail "expected the reason once in $log"
    grep -q "is pooled per transaction" "$log" || fail "no reason in $log"
    ! grep -q "database unavailable" "$log" || fail "relay tx-$mode retried"
    say "  $(grep "session pool" "$log" | cut -c1-240)"
done
[ "$(http_count "$HTTP_LOG")" = 0 ] || fail "the refused relays published"

say "once-relay through the session pool: delivers every message"
sent=$((2 * ROUNDS * CLIENTS))
start_relay session --db "host=127.0.0.1 port=$PGB_PORT dbname=src_session user=postgres" --sink "$HTTP_URL" --poll-interval 100ms
once_wait_for "$sent messages delivered" 60 http_has "$HTTP_LOG" "$sent" || fail "$(http_count "$HTTP_LOG") of $sent delivered"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox has $(outbox_left)"
stop_relay session
[ "$RELAY_RC" = 0 ] || fail "session relay exited with $RELAY_RC"
! relay_log_has session "pooled per transaction" || fail "the session pool was taken for a transaction pool"
[ "$(jq -r 'select(.status == 200) | "\(.id) \(.topic)"' "$HTTP_LOG" | sort -u | awk '{print $2}' | sort | uniq -c |
     awk '{print $2 "=" $1}' | tr '\n' ' ')" = \
  "pool.js=$((ROUNDS * CLIENTS)) pool.py=$((ROUNDS * CLIENTS)) " ] || fail "delivered topics: $(jq -r .topic "$HTTP_LOG" | sort | uniq -c)"
say "poolers_pgbouncer: OK"
