#!/usr/bin/env bash
# Credentials the way systemd and Debian expect.
# - The units verify with systemd-analyze with the drop-in docs/relay-operations.md shows (its ini block,
#   taken from the document itself), and systemd reads that drop-in (a broken copy is reported).
# - With $CREDENTIALS_DIRECTORY as systemd sets it: the database password comes from the pgpass
#   credential through PGPASSFILE (a role that needs a password; without the credential the
#   relay cannot log in; a PGPASSFILE that does not exist is ignored), and the NATS token from the nats-token credential (a server that
#   requires a token; without the credential the relay is refused).
# - A password or token on the command line is warned about at start, naming the file or the
#   credential to use, never the secret.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

say "the units verify with the documented credentials drop-in"
command -v systemd-analyze >/dev/null || fail "systemd-analyze is needed (scripts/setup: systemd)"
# The drop-in as docs/relay-operations.md shows it: the ini block of its Credentials section.
awk '/^#+ Credentials/ {s = 1} s && /^```ini/ {c = 1; next} c && /^```/ {exit} c {print}' \
    "$ONCE_SOURCE_DIR/docs/relay-operations.md" >"$T/credentials.conf"
[ "$(grep -c '^LoadCredential=' "$T/credentials.conf")" = 4 ] || fail "docs/relay-operations.md: no four-line drop-in: $(cat "$T/credentials.conf")"
mkdir -p "$T/units"
for u in once-relay.service once-relay@.service; do
    # ExecStart must name an existing binary: the one just built.
    sed "s|/usr/bin/once-relay|$RELAY_BIN|" "$ONCE_SOURCE_DIR/packaging/systemd/$u" >"$T/units/$u"
    grep -q '^Environment=PGPASSFILE=%d/pgpass$' "$T/units/$u" || fail "$u does not point PGPASSFILE at the credential"
done
ln -s "$T/units/once-relay@.service" "$T/units/once-relay@shop.service"
for u in once-relay.service once-relay@shop.service; do
    mkdir -p "$T/units/$u.d"; cp "$T/credentials.conf" "$T/units/$u.d/credentials.conf"
done
verify_rc=0
verify=$(systemd-analyze verify --man=no "$T/units/once-relay.service" "$T/units/once-relay@shop.service" 2>&1) || verify_rc=$?
[ "$verify_rc" = 0 ] && [ -z "$verify" ] || fail "systemd-analyze verify (exit $verify_rc): $verify"
# The drop-in is read: a relative source path in it is reported.
sed -i 's|^LoadCredential=pgpass:/|LoadCredential=pgpass:|' "$T/units/once-relay.service.d/credentials.conf"
verify=$(systemd-analyze verify --man=no "$T/units/once-relay.service" 2>&1 || true)
grep -q 'Credential source .* not valid' <<<"$verify" || fail "systemd-analyze did not read the drop-in: $verify"

start_postgres
CREDS="$T/creds"; mkdir -p "$CREDS"
PW="pw-$(openssl rand -hex 12)"
TOKEN="tok-$(openssl rand -hex 12)"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE ROLE relay_pw LOGIN PASSWORD '$PW' IN ROLE once_relay"
# relay_pw must give a password (scram); everyone else keeps the cluster's trust.
hba="$ONCE_CLUSTER_DIR/data/pg_hba.conf"
{ echo "local all relay_pw scram-sha-256"; cat "$hba"; } >"$hba.new" && cat "$hba.new" >"$hba"
psql -X -q -d postgres -c "SELECT pg_reload_conf()" >/dev/null
echo "*:*:src:relay_pw:$PW" >"$CREDS/pgpass"
echo "$TOKEN" >"$CREDS/nats-token"
chmod 600 "$CREDS"/*; [ "$(id -u)" = 0 ] && chown -R postgres: "$CREDS"; chmod 700 "$CREDS"
PW_DB="host=$PGHOST port=$PGPORT user=relay_pw dbname=src"

NATS_PORT=$(free_port); NATS_MON=$(free_port)
mkdir -p "$T/nats"
nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -m "$NATS_MON" -sd "$T/nats" --auth "$TOKEN" >"$T/nats.log" 2>&1 &
BG_PIDS+=($!)
once_wait_for "nats-server" 20 curl -sf "http://127.0.0.1:$NATS_MON/healthz?js-enabled-only=true"
SINK="nats://127.0.0.1:$NATS_PORT?stream=CRED&subject_prefix=cred.&create_stream=1"

say "without the credentials: no database login, no NATS"
# PGPASSFILE naming a file that does not exist (the unit's %d/pgpass without that
# credential) is ignored by libpq: a role that needs no password still logs in.
out=$(as_relay_user env PGPASSFILE=/nonexistent/pgpass "$RELAY_BIN" --db "$SRC_DB" --sink stdout: --check-config 2>&1) ||
    fail "a missing PGPASSFILE broke the login: $out"
out=$(as_relay_user env PGPASSFILE=/nonexistent "$RELAY_BIN" --db "$PW_DB" --sink stdout: --check-config 2>&1) &&
    fail "logged in without a password: $out"
grep -qi "password" <<<"$out" || fail "unexpected failure: $out"
out=$(as_relay_user "$RELAY_BIN" --db "$SRC_DB" --sink "$SINK" --check-config 2>&1) && fail "NATS accepted no token: $out"
grep -qi "author" <<<"$out" || fail "unexpected failure: $out"

say "with \$CREDENTIALS_DIRECTORY and PGPASSFILE=%d/pgpass, as the unit sets them"
psql_src -c "SELECT once.send('cred.a', '{\"n\": 1}', 'k1')" >/dev/null
psql_src -c "SELECT once.send('cred.b', '{\"n\": 2}')" >/dev/null
RELAY_WRAP=(env CREDENTIALS_DIRECTORY="$CREDS" PGPASSFILE="$CREDS/pgpass")
start_relay cred --db "$PW_DB" --sink "$SINK" --poll-interval 100ms --maintenance off
RELAY_WRAP=()
once_wait_for "2 messages in the stream" 30 stream_has CRED 2 || fail "stream CRED has $(stream_msgs CRED)"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox: $(psql_src -c "SELECT id, last_error FROM once.outbox")"
stop_relay cred
[ "$RELAY_RC" = 0 ] || fail "relay exit $RELAY_RC"
! grep -qF -- "$PW" "$T/relay-cred.log" && ! grep -qF -- "$TOKEN" "$T/relay-cred.log" || fail "a secret in the log"
! relay_log_has cred "holds a" || fail "warned with credentials from files: $(grep warn "$T/relay-cred.log")"

say "secrets on the command line are warned about, never shown"
out=$(as_relay_user "$RELAY_BIN" --db "$PW_DB password=$PW" --sink "nats://$TOKEN@127.0.0.1:$NATS_PORT?stream=CRED" --check-config 2>&1) ||
    fail "check-config: $out"
grep -q "configuration OK" <<<"$out" || fail "check-config: $out"
grep -q "warn.*--db holds a password on the command line.*LoadCredential=pgpass" <<<"$out" || fail "no --db warning: $out"
grep -q "warn.*--sink holds a NATS token on the command line.*nats-token" <<<"$out" || fail "no --sink warning: $out"
! grep -qF -- "$PW" <<<"$out" && ! grep -qF -- "$TOKEN" <<<"$out" || fail "a secret in the output: $out"
# The same settings in a config file (mode 0640, not visible in ps): no warning.
printf 'db = %s password=%s\nsink = nats://%s@127.0.0.1:%s?stream=CRED\n' "$PW_DB" "$PW" "$TOKEN" "$NATS_PORT" >"$T/relay.conf"
chmod 640 "$T/relay.conf"; [ "$(id -u)" = 0 ] && chown root:postgres "$T/relay.conf"
out=$(as_relay_user "$RELAY_BIN" --config "$T/relay.conf" --check-config 2>&1) || fail "check-config with the file: $out"
! grep -q "warn" <<<"$out" || fail "warned about a config file: $out"
say "relay_credentials: OK"
