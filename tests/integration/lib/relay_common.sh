# Shared helpers for tests/integration/relay_*.sh. Source it after `set -euo pipefail`.
# Provides a throwaway PostgreSQL (source database "src", inbox database "dst"), NATS with
# JetStream, the HTTP receiver, and relay start/stop helpers. Everything listens on loopback
# or a Unix socket; everything is stopped by the EXIT trap.
: "${ONCE_STAGE_DIR:?}" "${ONCE_BUILD_DIR:?}" "${ONCE_SOURCE_DIR:?}"
source "$ONCE_SOURCE_DIR/tests/lib/cluster.sh"

RELAY_BIN="$ONCE_BUILD_DIR/daemon/once-relay"
RELAY_LIB="$ONCE_SOURCE_DIR/tests/integration/lib"
T=$(mktemp -d "${TMPDIR:-/tmp}/relay-test.XXXXXX")
chmod 777 "$T"
RELAY_PIDS=()
BG_PIDS=()
# Every process this test starts inherits this: the cleanup signals a remembered pid only if
# the process still carries it. With pid_max at 32768 the parallel suite reuses pids within
# minutes, and a pid of a process that ended earlier may belong to another test's by then (a
# fresh-clone run lost another test's HTTP receiver to a SIGKILL).
export ONCE_TEST_RUN="$T"
started_here() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | grep -qxF "ONCE_TEST_RUN=$T"; }

relay_cleanup() {
    local p killed=()
    for p in "${RELAY_PIDS[@]}" "${BG_PIDS[@]}"; do
        if started_here "$p"; then kill -9 "$p" 2>/dev/null || true; killed+=("$p"); fi
    done
    for p in "${killed[@]}"; do wait "$p" 2>/dev/null || true; done
    once_cluster_stop
    [ -n "${STANDBY_DIR:-}" ] && once_cluster_stop_dir "$STANDBY_DIR"
    if [ "${KEEP_TEST_DIR:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap relay_cleanup EXIT

say() { echo "[$(date +%T)] $*"; }
fail() { echo "FAIL: $*" >&2; for f in "$T"/relay-*.log; do [ -f "$f" ] && { echo "--- $f (tail)"; tail -20 "$f"; }; done >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# A free port below the kernel's ephemeral range, for a server that is restarted on the same
# port: while it is down, a client retrying 127.0.0.1:PORT can be handed PORT itself as its
# source port and connect to itself (TCP simultaneous open), and then holds the port the
# server wants back. (free_port's ports are ephemeral ones.)
restartable_port() {
    python3 - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    port = random.randrange(max(1024, low - 12000), low)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
else:
    raise SystemExit("no free port below the ephemeral range")
PY
}


psql_src() { psql -X -q -v ON_ERROR_STOP=1 -At -d src "$@"; }
psql_dst() { psql -X -q -v ON_ERROR_STOP=1 -At -d dst "$@"; }

# ONCE_RELAY_TRANSPORT=wal runs a relay test with the WAL transport (by hand, not in CTest:
# docs/tests.md): the server gets wal_level = logical, src sends with
# once.transport = 'wal' from a slot made at start, and every relay of src streams it.
RELAY_TRANSPORT=${ONCE_RELAY_TRANSPORT:-table}

# Start PostgreSQL with databases src (pg_once, relay's source) and dst (pg_once, inbox).
start_postgres() {
    if [ "$RELAY_TRANSPORT" = wal ]; then
        once_cluster_start "$@" wal_level=logical
        # (also in postgresql.auto.conf: a test that restarts the server with other options keeps it)
        psql -X -q -d postgres -c "ALTER SYSTEM SET wal_level = logical"
    else
        once_cluster_start "$@"
    fi
    local db
    for db in src dst; do
        psql -X -q -d postgres -c "CREATE DATABASE $db"
        psql -X -q -v ON_ERROR_STOP=1 -d $db -c "CREATE EXTENSION pg_once" >/dev/null 2>"$T/create-extension.log" ||
            fail "CREATE EXTENSION pg_once in $db: $(cat "$T/create-extension.log")"
    done
    [ "$(psql_src -c "SELECT to_regprocedure('once.claim(text,integer,interval,text[])') IS NOT NULL")" = t ] ||
        fail "this pg_once has no outbox (once.claim)"
    psql_dst -c "CREATE TABLE relay_received (n bigserial, id uuid, topic text, key text, payload jsonb, at timestamptz DEFAULT clock_timestamp())"
    [ "$(psql_dst -c "SELECT to_regprocedure('once.deliver(text,uuid,text,jsonb,jsonb)') IS NOT NULL")" = t ] ||
        fail "this pg_once has no inbox (once.deliver)"
    psql_dst >/dev/null <<'SQL'
CREATE FUNCTION public.record_message(msg once.inbound) RETURNS void LANGUAGE sql AS $$
  INSERT INTO public.relay_received (id, topic, key, payload)
  VALUES (msg.message_id::uuid, msg.topic, msg.headers->>'key', msg.payload) $$;
SELECT once.subscribe('>', 'public.record_message(once.inbound)'::regprocedure);
SQL
    # The relay runs as an unprivileged OS user (it refuses root): let it reach the socket.
    chmod 755 "$ONCE_CLUSTER_DIR"
    SRC_DB="host=$PGHOST port=$PGPORT user=postgres dbname=src"
    DST_URI="postgresql://postgres@/dst?host=$PGHOST&port=$PGPORT"
    if [ "$RELAY_TRANSPORT" = wal ]; then
        "${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --create-wal-slot >/dev/null || fail "--create-wal-slot"
        psql -X -q -d postgres -c "ALTER DATABASE src SET once.transport = 'wal'"
        say "ONCE_RELAY_TRANSPORT=wal: src sends to the WAL, its relays stream slot once_relay"
    fi
}

# start_standby: after `start_postgres synchronous_commit=remote_apply wal_level=replica`, a
# streaming standby made with pg_basebackup, then synchronous (remote_apply): a commit the
# producer saw is on the standby. Exports PRIMARY_DIR, STANDBY_DIR; PGHOST stays the primary.
sync_standbys() { [ "$(psql -X -At -h "$PRIMARY_DIR" -d postgres -c "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" = 1 ]; }
start_standby() {
    PRIMARY_DIR=$ONCE_CLUSTER_DIR
    STANDBY_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-standby.XXXXXX")
    [ "$(id -u)" = 0 ] && chown postgres: "$STANDBY_DIR"
    chmod 700 "$STANDBY_DIR"
    once_as_server_user pg_basebackup -c fast -D "$STANDBY_DIR/data" -R -X stream -h "$PRIMARY_DIR" -p 5432 -U postgres >/dev/null
    once_cluster_run "$STANDBY_DIR" synchronous_commit=remote_apply
    export PGHOST=$PRIMARY_DIR
    # Synchronous only once the standby streams (otherwise the setup itself would wait for it).
    psql -X -q -d postgres -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
    once_wait_for "standby streaming (sync)" 30 sync_standbys || fail "standby not synchronous"
}
# promote_standby: the primary dies (immediate stop), the standby is promoted; PGHOST follows.
standby_is_primary() { [ "$(psql -X -At -h "$STANDBY_DIR" -d postgres -c 'SELECT pg_is_in_recovery()')" = f ]; }
promote_standby() {
    once_as_server_user pg_ctl stop -D "$PRIMARY_DIR/data" -m immediate -w >/dev/null
    once_as_server_user pg_ctl promote -w -D "$STANDBY_DIR/data" >/dev/null
    export PGHOST=$STANDBY_DIR
    once_wait_for "standby promoted" 30 standby_is_primary || fail "promotion"
}

# send N messages in transactions of `chunk`; topic t.a|t.b, key k<i mod keys> (keys=0: none).
# payload {"n": i, "k": key}. Args: N [keys] [first]
send_messages() {
    local n=$1 keys=${2:-1000} first=${3:-1} chunk=2000 lo hi
    for ((lo = first; lo < first + n; lo += chunk)); do
        hi=$((lo + chunk - 1)); [ $hi -ge $((first + n)) ] && hi=$((first + n - 1))
        psql_src -c "SELECT count(once.send(CASE WHEN g % 2 = 0 THEN 't.a' ELSE 't.b' END,
                        jsonb_build_object('n', g, 'k', CASE WHEN $keys > 0 THEN 'k' || (g % GREATEST($keys,1)) END),
                        CASE WHEN $keys > 0 THEN 'k' || (g % GREATEST($keys,1)) END,
                        jsonb_build_object('key', CASE WHEN $keys > 0 THEN 'k' || (g % GREATEST($keys,1)) END, 'traceparent', '00-' || lpad(to_hex(g), 32, '0') || '-00f067aa0ba902b7-01')))
                     FROM generate_series($lo, $hi) g" >/dev/null
    done
}

# as_relay_user CMD...: the relay refuses root; under root run it as postgres. setpriv execs
# (no intermediate process), so $! is the relay itself and signals reach it directly.
as_relay_user() {
    if [ "$(id -u)" = 0 ]; then setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; else "$@"; fi
}

# start_relay NAME ARGS... : runs once-relay in the background.
# RELAY_WRAP: a command prefix that execs what follows (e.g. unshare into a mount namespace).
RELAY_AS=()
[ "$(id -u)" = 0 ] && RELAY_AS=(setpriv --reuid=postgres --regid=postgres --init-groups --)
RELAY_WRAP=()
start_relay() {
    local name=$1; shift
    if [ "$RELAY_TRANSPORT" = wal ] && [[ " $* " == *" --db $SRC_DB "* ]] && [[ " $* " != *" --transport "* ]]; then
        set -- "$@" --transport wal
    fi
    "${RELAY_WRAP[@]}" "${RELAY_AS[@]}" "$RELAY_BIN" --name "$name" --log-level "${RELAY_LOG_LEVEL:-info}" "$@" \
        >>"$T/relay-$name.out" 2>>"$T/relay-$name.log" &
    local pid=$!
    RELAY_PIDS+=("$pid")
    eval "RELAY_PID_${name//-/_}=$pid"
}
relay_pid() { local v="RELAY_PID_${1//-/_}"; echo "${!v}"; }
relay_child() { relay_pid "$1"; }
relay_alive() { kill -0 "$(relay_pid "$1")" 2>/dev/null; }
kill9_relay() {
    local c; c=$(relay_child "$1")
    kill -9 "$c" 2>/dev/null || true
    wait "$(relay_pid "$1")" 2>/dev/null || true
    forget_pid "$(relay_pid "$1")"
    # A kill -9 can cut the stdout sink's line being written (the kernel stops a write to a
    # file between pages for a fatal signal). That message was never acknowledged, so it comes
    # again; the cut line is dropped, as a consumer of the stream must drop it.
    local out="$T/relay-$1.out"
    if [ -s "$out" ] && [ -n "$(tail -c 1 "$out")" ]; then sed -i '$ d' "$out"; fi
}
# forget_pid PID: a reaped relay leaves RELAY_PIDS, so the cleanup never signals a pid that
# the system may have given to another process since (long runs restart relays hundreds of times).
forget_pid() {
    local p keep=()
    for p in "${RELAY_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    RELAY_PIDS=("${keep[@]}")
}
# stop_relay NAME: SIGTERM and wait (bounded); sets RELAY_RC to the exit code.
stop_relay() {
    local c pid
    c=$(relay_child "$1"); pid=$(relay_pid "$1")
    kill -TERM "$c" 2>/dev/null || true
    RELAY_RC=timeout
    once_wait_for "relay $1 to exit after SIGTERM" 30 bash -c "! kill -0 $c 2>/dev/null" || return 0
    RELAY_RC=0
    wait "$pid" || RELAY_RC=$?
    forget_pid "$pid"
}
relay_log_has() { grep -q -- "$2" "$T/relay-$1.log"; }

# NATS with JetStream on free loopback ports; exports NATS_PORT, NATS_MON.
start_nats() {
    NATS_PORT=$(free_port); NATS_MON=$(free_port)
    mkdir -p "$T/nats"
    nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -m "$NATS_MON" -sd "$T/nats" >"$T/nats.log" 2>&1 &
    BG_PIDS+=($!)
    once_wait_for "nats-server" 20 curl -sf "http://127.0.0.1:$NATS_MON/healthz?js-enabled-only=true"
}
# Messages stored in a stream (JetStream dedupes Nats-Msg-Id within its window).
stream_msgs() {
    curl -sf "http://127.0.0.1:$NATS_MON/jsz?streams=1" |
        jq -r --arg s "$1" '[.account_details[]?.stream_detail[]? | select(.name == $s) | .state.messages] | add // 0'
}

# HTTP receiver; exports HTTP_URL and HTTP_LOG. Args are passed to http_receiver.py.
start_http_receiver() {
    HTTP_LOG="$T/http-$1.jsonl"; local pf="$T/http-$1.port"; shift
    : >"$HTTP_LOG"; chmod 666 "$HTTP_LOG"
    python3 "$RELAY_LIB/http_receiver.py" --log "$HTTP_LOG" --port-file "$pf" "$@" >"$T/http.log" 2>&1 &
    BG_PIDS+=($!)
    once_wait_for "http receiver" 20 test -s "$pf"
    HTTP_URL="http://127.0.0.1:$(cat "$pf")/hook"
}
http_count() { jq -r "select(.status == ${2:-200}) | .id" "$1" | sort -u | wc -l; }

outbox_left() {
    psql_src -c "SELECT count(*) FROM once.outbox WHERE dead_at IS NULL"
}

# Conditions for once_wait_for (functions run in this shell: no subshell re-sourcing).
stream_has() { [ "$(stream_msgs "$1")" -ge "$2" ]; }
outbox_empty() { [ "$(outbox_left)" = 0 ]; }
lines_have_ids() { [ "$(jq -r .id "$1" 2>/dev/null | sort -u | wc -l)" -ge "$2" ]; }
http_has() { [ "$(http_count "$1" "${3:-200}")" -ge "$2" ]; }
inbox_has() { [ "$(psql_dst -c 'SELECT count(DISTINCT id) FROM relay_received')" -ge "$1" ]; }
