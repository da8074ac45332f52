#!/usr/bin/env bash
# The shipped alert rules (packaging/monitoring/once-relay-alerts.yml) in a real Prometheus,
# fed by once-console's /metrics (--metrics-listen), on both transports at once: database src
# sends to the outbox table, database srcw to the WAL (once.transport = 'wal'), each with its
# relay (NATS sink, --heartbeat-interval 1s) and its console. Prometheus scrapes every second
# and evaluates every second; the rules' "for:" are rewritten to 0s in the test's copy (the
# shipped file keeps its durations). Each alert is read from /api/v1/alerts, polled with a
# deadline, until it fires, and again until it clears once the cause is fixed:
#   * a relay killed (kill -9) while messages wait: OnceNoRelay (src: the table),
#     OnceWalSlotNotStreamed (srcw: the slot); a restarted relay clears them;
#   * the sink down (NATS stopped): OnceRelayReportsSinkDown for both relays, and on srcw,
#     with a message held in the slot and WAL written meanwhile, OnceWalSlotNearLimit
#     (max_slot_wal_keep_size = 64MB); NATS back clears both, and the WAL relay's "sink
#     healed" line names the slot and the WAL it holds;
#   * a first dead letter: OnceDeadLetters; discarded: clears;
#   * a key blocked by a dead head: OnceKeyBlocked; the head discarded: clears.
# Also: the relays' heartbeats are in once.relay_heartbeats (a cleanly stopped relay's last
# beat says so), and every metric a console renders is documented.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
command -v prometheus >/dev/null || { echo "prometheus is not installed"; exit 77; }
CONSOLE_BIN="$ONCE_BUILD_DIR/daemon/console/once-console"
[ -x "$CONSOLE_BIN" ] || { echo "once-console is not built"; exit 77; }

start_postgres wal_level=logical max_slot_wal_keep_size=64MB
psql -X -q -d postgres -c "CREATE DATABASE srcw"
psql -X -q -v ON_ERROR_STOP=1 -d srcw -c "CREATE EXTENSION pg_once" >/dev/null
SRCW_DB="host=$PGHOST port=$PGPORT user=postgres dbname=srcw"
"${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRCW_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
psql -X -q -d postgres -c "ALTER DATABASE srcw SET once.transport = 'wal'"
psql_w() { psql -X -q -v ON_ERROR_STOP=1 -At -d srcw "$@"; }
psql_db() { local db=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -At -d "$db" "$@"; }

NATS_PORT=$(restartable_port); NATS_MON=$(restartable_port)
mkdir -p "$T/nats"
NATS_PID=
nats_start() {
    nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -m "$NATS_MON" -sd "$T/nats" >>"$T/nats.log" 2>&1 &
    NATS_PID=$!
    BG_PIDS+=("$NATS_PID")
    once_wait_for "nats-server" 20 curl -sf "http://127.0.0.1:$NATS_MON/healthz?js-enabled-only=true" || fail "nats-server did not start"
}
nats_stop() {
    kill -TERM "$NATS_PID" 2>/dev/null || true
    once_wait_for "nats-server to exit" 20 bash -c "! kill -0 $NATS_PID 2>/dev/null" || fail "nats-server did not stop"
    wait "$NATS_PID" 2>/dev/null || true
}
nats_start
NATS_URI="nats://127.0.0.1:$NATS_PORT?stream=MON&subject_prefix=once.&create_stream=1"
# Relays serve t.* only: the test makes its dead letters and blocked keys on x.* by hand.
# rt beats every 5 s: a kill -9 must still turn red within that one interval (the console sees
# the relay's connections gone), not after its beat has aged.
BEAT_T=5
relay_t() { start_relay rt --db "$SRC_DB" --sink "$NATS_URI" --topics 't.*' --heartbeat-interval ${BEAT_T}s --poll-interval 100ms \
                --reconnect-max 500ms; }
relay_w() { start_relay rw --db "$SRCW_DB" --transport wal --sink "$NATS_URI" --topics 't.*' --heartbeat-interval 1s \
                --poll-interval 100ms --reconnect-max 500ms; }
relay_t
relay_w

# A console per database, each with its /metrics on a free loopback port; its login has
# once_console_admin only.
psql -X -q -d postgres -c "CREATE ROLE console_login LOGIN; GRANT once_console_admin TO console_login"
printf 'admin admin %s\n' "$(head -c 24 /dev/urandom | base64 | tr -d '/+=' | "$CONSOLE_BIN" --hash-secret)" >"$T/users"
chmod 600 "$T/users"
[ "$(id -u)" = 0 ] && chown postgres: "$T/users"
CONSOLE_PIDS=()
start_console() {
    local db=$1 port mport
    port=$(free_port); mport=$(free_port)
    cat >"$T/console-$db.conf" <<CONF
db = host=$PGHOST port=$PGPORT user=console_login dbname=$db
listen = 127.0.0.1:$port
metrics-listen = 127.0.0.1:$mport
credentials = $T/users
CONF
    chmod 644 "$T/console-$db.conf"
    "${RELAY_AS[@]}" "$CONSOLE_BIN" --config "$T/console-$db.conf" >"$T/console-$db.log" 2>&1 &
    BG_PIDS+=($!)
    eval "MPORT_$db=$mport"
    once_wait_for "once-console of $db serves /metrics" 30 curl -sf "http://127.0.0.1:$mport/metrics" ||
        fail "no /metrics from the console of $db: $(tail -5 "$T/console-$db.log")"
}
start_console src
start_console srcw

# Prometheus with the shipped rules, every "for:" rewritten to 0s (only in this copy).
sed -E 's/^( +)for: .*/\1for: 0s/' "$ONCE_SOURCE_DIR/packaging/monitoring/once-relay-alerts.yml" >"$T/rules.yml"
grep -q 'for: 0s' "$T/rules.yml" || fail "no for: rewritten"
PROM_PORT=$(free_port)
cat >"$T/prometheus.yml" <<CONF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["$T/rules.yml"]
scrape_configs:
  - job_name: console
    static_configs:
      - targets: ["127.0.0.1:$MPORT_src", "127.0.0.1:$MPORT_srcw"]
CONF
mkdir -p "$T/prometheus"
chmod 777 "$T/prometheus"
"${RELAY_AS[@]}" prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prometheus" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$T/prometheus.log" 2>&1 &
BG_PIDS+=($!)
PROM="http://127.0.0.1:$PROM_PORT"
once_wait_for "prometheus ready" 60 curl -sf "$PROM/-/ready" || fail "prometheus: $(tail -5 "$T/prometheus.log")"
targets_up() { [ "$(curl -sf "$PROM/api/v1/targets" | jq '[.data.activeTargets[] | select(.health == "up")] | length')" = 2 ]; }
once_wait_for "both consoles scraped" 30 targets_up || fail "targets: $(curl -sf "$PROM/api/v1/targets")"

# firing ALERT database [label=value]: an alert of that name and database is firing.
firing() {
    local name=$1 db=$2 extra=${3:-}
    curl -sf "$PROM/api/v1/alerts" | jq -e --arg n "$name" --arg d "$db" --arg x "$extra" '
        [.data.alerts[] | select(.state == "firing" and .labels.alertname == $n and .labels.database == $d)
           | select($x == "" or (.labels[$x | split("=")[0]] == ($x | split("=")[1])))] | length > 0' >/dev/null
}
not_firing() { ! firing "$@"; }
expect_fires() {
    local t0=$SECONDS
    once_wait_for "$1 fires on $2 ${3:-}" 60 firing "$@" ||
        fail "$1 did not fire on $2: $(curl -sf "$PROM/api/v1/alerts" | jq -c '[.data.alerts[] | .labels]')"
    say "$1 fires on $2 ${3:-} (after $((SECONDS - t0)) s)"
}
expect_clears() {
    once_wait_for "$1 clears on $2" 60 not_firing "$@" ||
        fail "$1 still fires on $2: $(curl -sf "$PROM/api/v1/alerts" | jq -c '[.data.alerts[] | .labels]')"
    say "$1 cleared on $2"
}
beats_of() { psql_db "$1" -c "SELECT count(*) FROM once.relay_heartbeats WHERE relay = '$2' AND state <> 'stopped' AND now() - last_beat < interval '3 seconds'"; }
alive_in() { [ "$(beats_of "$1" "$2")" = 1 ]; }
delivered_t() { [ "$(psql_db "$1" -c "SELECT count(*) FROM once.outbox WHERE topic LIKE 't.%'")" = 0 ]; }
slot_active() { [ "$(psql_w -c "SELECT active FROM pg_replication_slots WHERE slot_name = 'once_relay'")" = t ]; }

say "both relays beat; nothing fires"
once_wait_for "rt beats in src" 30 alive_in src rt || fail "no heartbeat of rt: $(psql_src -c 'TABLE once.relay_heartbeats')"
once_wait_for "rw beats in srcw" 30 alive_in srcw rw || fail "no heartbeat of rw: $(psql_w -c 'TABLE once.relay_heartbeats')"
rt_relays() { [ "$(psql_src -c "SELECT transport || ' ' || state FROM once.relay_heartbeats WHERE relay = 'rt'")" = "table relaying" ]; }
once_wait_for "rt relays" 30 rt_relays || fail "rt's beat: $(psql_src -c 'TABLE once.relay_heartbeats')"
once_wait_for "rw streams" 30 bash -c "[ \"\$(psql -X -At -d srcw -c \"SELECT transport || ' ' || state FROM once.relay_heartbeats WHERE relay = 'rw'\")\" = 'wal streaming' ]" ||
    fail "rw's beat: $(psql_w -c 'TABLE once.relay_heartbeats')"
psql_src -c "SELECT once.send('t.a', '{\"n\": 1}')" >/dev/null
psql_w -c "SELECT once.send('t.a', '{\"n\": 1}')" >/dev/null
once_wait_for "src delivered" 30 delivered_t src || fail "src did not deliver"
curl -sf "http://127.0.0.1:$MPORT_src/metrics" >"$T/console-metrics.txt"
grep -q '^once_db_relays_alive{database="src"} 1$' "$T/console-metrics.txt" || fail "src: $(grep relays_alive "$T/console-metrics.txt")"
# Every metric the console renders is in docs/console.md (tests/monitoring/check.sh takes the
# console's names from its source).
for m in $(awk '/^# TYPE /{print $3}' "$T/console-metrics.txt"); do
    grep -q "\`$m\`" "$ONCE_SOURCE_DIR/docs/console.md" || fail "$m is not in docs/console.md"
done
# (first Prometheus has both relays alive from a scrape and has evaluated the rules since)
prom_query() { curl -sf "$PROM/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result | length'; }
evaluated() { [ "$(prom_query 'once_db_relays_alive == 1')" = 2 ]; }
once_wait_for "Prometheus sees both relays alive" 30 evaluated || fail "relays alive: $(curl -sf "$PROM/api/v1/query" --data-urlencode 'query=once_db_relays_alive')"
last_evaluation() { curl -sf "$PROM/api/v1/rules" | jq -r '.data.groups[] | select(.name == "once-database") | .lastEvaluation'; }
EVAL0=$(last_evaluation)
evaluated_since() { [ "$(last_evaluation)" != "$EVAL0" ]; }
once_wait_for "the next rule evaluation" 10 evaluated_since || fail "the rules are not evaluated"
no_alert_firing() { [ "$(curl -sf "$PROM/api/v1/alerts" | jq '[.data.alerts[] | select(.state == "firing")] | length')" = 0 ]; }
once_wait_for "no alert firing with both relays up" 30 no_alert_firing ||
    fail "alerts with both relays up: $(curl -sf "$PROM/api/v1/alerts" | jq -c '[.data.alerts[] | .labels]')"

say "relays killed while messages wait"
killed_at=$(date +%s.%N)
kill9_relay rt
kill9_relay rw
psql_src -c "SELECT count(once.send('t.a', jsonb_build_object('n', g))) FROM generate_series(1, 150) g" >/dev/null
psql_w -c "SELECT count(once.send('t.a', jsonb_build_object('n', g))) FROM generate_series(1, 150) g" >/dev/null
expect_fires OnceNoRelay src
took=$(echo "$(date +%s.%N) - $killed_at" | bc)
say "OnceNoRelay fired $took s after the kill (heartbeat interval ${BEAT_T} s)"
[ "$(echo "$took <= $BEAT_T" | bc)" = 1 ] || fail "OnceNoRelay took $took s, more than one heartbeat interval (${BEAT_T} s)"
expect_fires OnceWalSlotNotStreamed srcw slot=once_relay
not_firing OnceNoRelay srcw || fail "OnceNoRelay on srcw, whose messages are in the slot, not in the table"
relay_t
relay_w
expect_clears OnceNoRelay src
expect_clears OnceWalSlotNotStreamed srcw
once_wait_for "src delivered" 30 delivered_t src || fail "src did not deliver after the restart"

say "the sink down"
nats_stop
psql_w -c "SELECT once.send('t.a', '{\"held\": true}')" >/dev/null   # (held in the slot: nothing confirms past it)
expect_fires OnceRelayReportsSinkDown src relay=rt
expect_fires OnceRelayReportsSinkDown srcw relay=rw
not_firing OnceWalSlotNearLimit srcw || fail "OnceWalSlotNearLimit before the slot held much"
# ~40 MB of WAL while rw cannot confirm: the slot holds more than the 64MB keep size leaves.
psql_src -c "CREATE TABLE pad AS SELECT g, repeat('x', 1000) AS filler FROM generate_series(1, 40000) g" >/dev/null
expect_fires OnceWalSlotNearLimit srcw slot=once_relay
nats_start
expect_clears OnceRelayReportsSinkDown src
expect_clears OnceRelayReportsSinkDown srcw
expect_clears OnceWalSlotNearLimit srcw
# The relay's "sink healed" line: on the WAL transport it names the slot and what it holds,
# not the table, where those messages are not.
once_wait_for "rw logs the sink healed" 30 relay_log_has rw "sink healed" || fail "rw did not log the sink healed"
grep "sink healed" "$T/relay-rw.log" | grep -Eq "; [0-9]+ byte\(s\) of WAL waiting in slot once_relay" ||
    fail "rw's sink healed line does not name the slot: $(grep 'sink healed' "$T/relay-rw.log")"
once_wait_for "rt logs the sink healed" 30 relay_log_has rt "sink healed" || fail "rt did not log the sink healed"
grep "sink healed" "$T/relay-rt.log" | grep -q "message(s) waiting in the outbox" ||
    fail "rt's sink healed line: $(grep 'sink healed' "$T/relay-rt.log")"
psql_src -c "DROP TABLE pad"

# dead_letter DB TOPIC [KEY]: sends two messages (keyed: the second waits behind the first) in
# the table, claims the first by hand and declares it dead; prints its id.
dead_letter() {
    local db=$1 topic=$2 key=${3:-}
    local k=NULL; [ -n "$key" ] && k="'$key'"
    psql_db "$db" -c "SET once.transport = 'table'" -c "SELECT once.send('$topic', '{\"n\": 1}', key => $k)" \
        -c "SELECT once.send('$topic', '{\"n\": 2}', key => $k)" >/dev/null
    psql_db "$db" -c "SELECT id FROM once.claim('by-hand', 1, interval '1 minute', ARRAY['$topic'])" >"$T/claimed"
    [ -s "$T/claimed" ] || fail "nothing claimed on $topic in $db"
    [ "$(psql_db "$db" -c "SELECT once.dead('by-hand', '$(cat "$T/claimed")', 'refused by the test')")" = dead ] ||
        fail "once.dead on $db"
    cat "$T/claimed"
}
for db in src srcw; do
    say "$db: a first dead letter"
    id=$(dead_letter "$db" x.first)
    expect_fires OnceDeadLetters "$db" topic=x.first
    psql_db "$db" -c "SELECT once.discard(ARRAY['$id']::uuid[])" >/dev/null
    expect_clears OnceDeadLetters "$db"
    psql_db "$db" -c "SELECT once.discard(ARRAY(SELECT id FROM once.outbox WHERE topic = 'x.first'))" >/dev/null 2>&1 || true

    say "$db: a key blocked by a dead head"
    id=$(dead_letter "$db" x.keyed k1)
    expect_fires OnceKeyBlocked "$db"
    psql_db "$db" -c "SELECT once.discard(ARRAY['$id']::uuid[])" >/dev/null
    expect_clears OnceKeyBlocked "$db"
done

say "a relay stopped cleanly is not alive at once: its last beat says stopped"
stop_relay rt
[ "$RELAY_RC" = 0 ] || fail "rt exited $RELAY_RC"
[ "$(psql_src -c "SELECT state FROM once.relay_heartbeats WHERE relay = 'rt'")" = stopped ] ||
    fail "rt's last beat: $(psql_src -c 'TABLE once.relay_heartbeats')"
psql_src -c "SELECT once.send('t.a', '{\"n\": 2}')" >/dev/null
expect_fires OnceNoRelay src
say "OK"
