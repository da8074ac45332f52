#!/usr/bin/env bash
# once-console (docs/console.md) against a throwaway PostgreSQL filled by
# tests/console/fixture.sql: headless Chromium logs in, opens every page, redrives a dead
# letter and retries a failed saga by clicking (tests/console/browser_test.py), and the
# effects are checked with psql. Then, with curl: a form without the right CSRF token is
# refused, a viewer cannot act, and the viewer role cannot call the action functions in SQL.
# Screenshots: $ONCE_BUILD_DIR/console-screenshots/*.png.
set -euo pipefail
: "${ONCE_STAGE_DIR:?}" "${ONCE_BUILD_DIR:?}" "${ONCE_SOURCE_DIR:?}"
source "$ONCE_SOURCE_DIR/tests/lib/cluster.sh"

CONSOLE_BIN="$ONCE_BUILD_DIR/daemon/console/once-console"
[ -x "$CONSOLE_BIN" ] || { echo "once-console is not built"; exit 77; }
for tool in chromium chromedriver; do
    command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (scripts/setup installs it)"; exit 77; }
done
# Debian's python3-selenium is for Debian's python3 (a pyenv or venv python3 first on PATH lacks it).
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
$PY -c 'import selenium' 2>/dev/null || { echo "SKIP: python3-selenium is not installed"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/console-test.XXXXXX")
chmod 755 "$T"
CONSOLE_PID= RELAY_PID=
cleanup() {
    [ -n "$CONSOLE_PID" ] && kill "$CONSOLE_PID" 2>/dev/null && wait "$CONSOLE_PID" 2>/dev/null || true
    [ -n "$RELAY_PID" ] && kill "$RELAY_PID" 2>/dev/null && wait "$RELAY_PID" 2>/dev/null || true
    once_cluster_stop
    if [ "${KEEP_TEST_DIR:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
say() { echo "[$(date +%T)] $*"; }
fail() { echo "FAIL: $*" >&2; echo "--- console log (tail)" >&2; tail -20 "$T/console.log" >&2 || true; exit 1; }

# wal_level = logical: the WAL transport's page reads a slot of this database.
once_cluster_start wal_level=logical
psql -X -q -d postgres -c "CREATE DATABASE console"
export PGDATABASE=console
psql -X -q -v ON_ERROR_STOP=1 -f "$ONCE_SOURCE_DIR/tests/console/fixture.sql" >"$T/fixture.log" 2>&1 ||
    { cat "$T/fixture.log"; fail "fixture"; }
# The WAL transport: a slot no relay streams yet, once.transport = 'wal' for the database (so
# for the console's sessions too), and 150 messages that wait in the slot, not in the table.
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE PUBLICATION console_pub" \
     -c "SELECT pg_create_logical_replication_slot('console_wal', 'pgoutput')" \
     -c "ALTER DATABASE console SET once.transport = 'wal'" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -c "SELECT count(once.send('wal.backlog', jsonb_build_object('n', g))) FROM generate_series(1, 150) g" >/dev/null
[ "$(psql -X -At -c "SELECT count(*) FROM once.outbox WHERE topic = 'wal.backlog'")" = 0 ] ||
    fail "with once.transport = 'wal' the messages became rows"
# A second database for the same console: no row in its outbox, once.transport = 'wal' and 150
# messages waiting in its own slot (the case where the overview used to say "The outbox is
# empty").
psql -X -q -d postgres -c "CREATE DATABASE walonly"
psql -X -q -v ON_ERROR_STOP=1 -d walonly -c "CREATE EXTENSION pg_once" -c "CREATE PUBLICATION walonly_pub" \
     -c "SELECT pg_create_logical_replication_slot('walonly_slot', 'pgoutput')" \
     -c "ALTER DATABASE walonly SET once.transport = 'wal'" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d walonly -c "SELECT count(once.send('wal.only', jsonb_build_object('n', g))) FROM generate_series(1, 150) g" >/dev/null
# The console's database login: once_console_admin only, nothing else.
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE ROLE console_login LOGIN; GRANT once_console_admin TO console_login"

# The console runs as an unprivileged user (it refuses root): postgres under root.
AS=()
[ "$(id -u)" = 0 ] && AS=(setpriv --reuid=postgres --regid=postgres --init-groups --)
ADMIN_SECRET=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
VIEWER_SECRET=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
admin_hash=$(printf '%s\n' "$ADMIN_SECRET" | "$CONSOLE_BIN" --hash-secret)
viewer_hash=$(printf '%s\n' "$VIEWER_SECRET" | "$CONSOLE_BIN" --hash-secret)
printf 'admin admin %s\nviewer viewer %s\n' "$admin_hash" "$viewer_hash" >"$T/users"
chmod 600 "$T/users"
[ "$(id -u)" = 0 ] && chown postgres: "$T/users"

say "a world-readable credentials file is refused"
chmod 644 "$T/users"
out=$("${AS[@]}" "$CONSOLE_BIN" --db "host=$PGHOST port=$PGPORT user=console_login dbname=console" \
      --credentials "$T/users" --check-config 2>&1) && fail "accepted a world-readable credentials file"
grep -q "readable or writable by others" <<<"$out" || fail "unexpected message: $out"
chmod 600 "$T/users"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$T/console.conf" <<CONF
db = host=$PGHOST port=$PGPORT user=console_login dbname=console
database = walonly host=$PGHOST port=$PGPORT user=console_login dbname=walonly
listen = 127.0.0.1:$PORT
credentials = $T/users
log-level = debug
rate-interval = 1s
CONF
chmod 644 "$T/console.conf"
"${AS[@]}" "$CONSOLE_BIN" --config "$T/console.conf" >"$T/console.log" 2>&1 &
CONSOLE_PID=$!
URL="http://127.0.0.1:$PORT"
healthy() { curl -sf --max-time 2 "$URL/healthz" >/dev/null; }
once_wait_for "once-console answers" 30 healthy || fail "once-console did not start"

# A relay the overview lists (it relays a topic nobody sends to: the fixture stays as it is).
RELAY_BIN="$ONCE_BUILD_DIR/daemon/once-relay"
if [ -x "$RELAY_BIN" ]; then
    "${AS[@]}" "$RELAY_BIN" --db "host=$PGHOST port=$PGPORT user=postgres dbname=console" --sink stdout: \
        --name console-test-relay --topics nobody.sends.this --maintenance off >"$T/relay.out" 2>"$T/relay.log" &
    RELAY_PID=$!
    relay_seen() { [ "$(psql -X -At -c "SELECT count(*) FROM once.console_relays() WHERE relay = 'console-test-relay'")" = 1 ]; }
    once_wait_for "the relay connects" 30 relay_seen || { cat "$T/relay.log"; fail "relay"; }
    # (its beats then stay the same until it stops: the page and the database agree)
    relay_beats() { [ "$(psql -X -At -c "SELECT state FROM once.relay_heartbeats WHERE relay = 'console-test-relay'")" = relaying ]; }
    once_wait_for "the relay's heartbeat says relaying" 30 relay_beats || { cat "$T/relay.log"; fail "no heartbeat"; }
    # (the browser test stops it with SIGTERM: RELAY_PID is the relay itself, setpriv execs)
    export EXPECT_RELAY=console-test-relay RELAY_PID
fi

say "browser"
SHOTS="$ONCE_BUILD_DIR/console-screenshots"
rm -rf "$SHOTS"
FORBIDDEN=$(printf '%s\n' "$ADMIN_SECRET" "$VIEWER_SECRET" "$admin_hash" "$viewer_hash" \
            "${admin_hash##*\$}" "${viewer_hash##*\$}")
ADMIN_SECRET=$ADMIN_SECRET VIEWER_SECRET=$VIEWER_SECRET FORBIDDEN=$FORBIDDEN \
    $PY "$ONCE_SOURCE_DIR/tests/console/browser_test.py" "$URL" "$SHOTS" || fail "browser test"
ls "$SHOTS"/*.png >/dev/null || fail "no screenshots"

say "CSRF and roles (curl)"
# login: the form's token and its cookie must match
curl_login() {   # USER SECRET JAR -> prints the session's CSRF token
    local jar=$3 token
    token=$(curl -sf -c "$jar" "$URL/login" | grep -o 'name=csrf value="[0-9a-f]*"' | head -1 | cut -d'"' -f2)
    curl -sf -b "$jar" -c "$jar" -o /dev/null --data-urlencode "csrf=$token" --data-urlencode "user=$1" \
         --data-urlencode "secret=$2" "$URL/login"
    curl -sf -b "$jar" "$URL/dead" | grep -o 'name=csrf value="[0-9a-f]*"' | head -1 | cut -d'"' -f2
}
code=$(curl -s -o /dev/null -w '%{http_code}' --data "csrf=x&user=admin&secret=$ADMIN_SECRET" "$URL/login")
[ "$code" = 403 ] || fail "a login without the login cookie's token got HTTP $code"
admin_csrf=$(curl_login admin "$ADMIN_SECRET" "$T/admin.jar")
[ ${#admin_csrf} = 64 ] || fail "no CSRF token after the admin's login"
victim=$(psql -X -At -c "SELECT id FROM once.outbox WHERE key = 'pay-7' AND dead_at IS NOT NULL")
[ -n "$victim" ] || fail "no dead head for pay-7"
for form in "op=redrive&id=$victim" "op=redrive&id=$victim&csrf=" "op=redrive&id=$victim&csrf=${admin_csrf//[0-9a-f]/0}"; do
    code=$(curl -s -o "$T/out" -w '%{http_code}' -b "$T/admin.jar" --data "$form" "$URL/dead/act")
    [ "$code" = 403 ] || fail "POST /dead/act with \"${form%%csrf*}...\" (bad CSRF) got HTTP $code"
done
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$T/admin.jar" --data "op=retry&name=cafe_order&saga_id=order-declined-2" "$URL/sagas/act")
[ "$code" = 403 ] || fail "POST /sagas/act without CSRF got HTTP $code"
[ "$(psql -X -At -c "SELECT dead_at IS NOT NULL FROM once.outbox WHERE id = '$victim'")" = t ] || fail "redriven without a CSRF token"
[ "$(psql -X -At -c "SELECT status FROM once.saga_instances WHERE saga_id = 'order-declined-2'")" = failed ] || fail "retried without a CSRF token"
viewer_csrf=$(curl_login viewer "$VIEWER_SECRET" "$T/viewer.jar")
[ ${#viewer_csrf} = 64 ] || fail "no CSRF token after the viewer's login"
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$T/viewer.jar" --data "csrf=$viewer_csrf&op=redrive&id=$victim" "$URL/dead/act")
[ "$code" = 403 ] || fail "a viewer's redrive got HTTP $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$T/viewer.jar" --data "csrf=$viewer_csrf&op=abort&name=cafe_order&saga_id=order-declined-2" "$URL/sagas/act")
[ "$code" = 403 ] || fail "a viewer's saga abort got HTTP $code"
[ "$(psql -X -At -c "SELECT dead_at IS NOT NULL FROM once.outbox WHERE id = '$victim'")" = t ] || fail "a viewer redrove"
# the session's CSRF token does not work for another session
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$T/admin.jar" --data "csrf=$viewer_csrf&op=redrive&id=$victim" "$URL/dead/act")
[ "$code" = 403 ] || fail "another session's CSRF token was accepted (HTTP $code)"
# with its own token the admin's form works (the refusals above were for the token)
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$T/admin.jar" --data "csrf=$admin_csrf&op=redrive&id=$victim" "$URL/dead/act")
[ "$code" = 303 ] || fail "the admin's redrive with its token got HTTP $code"
[ "$(psql -X -At -c "SELECT dead_at IS NULL FROM once.outbox WHERE id = '$victim'")" = t ] || fail "the admin's redrive did nothing"

say "the database enforces the roles too"
out=$(psql -X -At -v ON_ERROR_STOP=1 -c "SET ROLE once_console_viewer" \
      -c "SELECT once.console_saga_retry('mallory', 'cafe_order', 'order-declined-2')" 2>&1) && fail "viewer role could retry: $out"
grep -q "permission denied" <<<"$out" || fail "unexpected: $out"
out=$(psql -X -At -v ON_ERROR_STOP=1 -c "SET ROLE once_console_viewer" -c "SELECT count(*) FROM once.outbox" 2>&1) &&
    fail "viewer role could read once.outbox: $out"
[ "$(psql -X -q -At -c "SET ROLE once_console_viewer; SELECT dead FROM once.console_topics() WHERE topic = 'payment.capture'")" = 3 ] ||
    fail "viewer role cannot read the overview"
say "console_browser: OK"
