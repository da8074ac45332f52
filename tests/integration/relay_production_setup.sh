#!/usr/bin/env bash
# docs/relay-operations.md, "Production setup", as it stands: its SQL blocks, its pg_hba.conf
# line (as a local-socket line: the test server listens on no TCP port) and its pgpass line
# are taken from the document itself. Then, as the relay's login role with the password from
# the pgpass credential: --check-config passes, --create-wal-slot creates the slot, CREATE is
# taken back, and the relay streams every message over the WAL transport with exactly the
# 7 connections the document counts.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

doc="$ONCE_SOURCE_DIR/docs/relay-operations.md"
section=$(awk '/^## Production setup/ {s = 1; next} s && /^## / {exit} s {print}' "$doc")
# block N LANG: the N-th fenced block of the section whose fence reads ```LANG.
block() { awk -v n="$1" -v lang="$2" '/^ *```/ { if (in_block) { in_block = c = 0; next } in_block = 1; if ($0 ~ "^ *```" lang "$" && ++k == n) c = 1; next } c' <<<"$section" | sed 's/^   //'; }
sql1=$(block 1 sql); sql2=$(block 2 sql); hba_line=$(block 1 ""); pgpass_line=$(block 2 "")
grep -q "CREATE ROLE shop_relay LOGIN" <<<"$sql1" || fail "no role statement in the section: $sql1"
grep -q "REVOKE CREATE ON DATABASE shop" <<<"$sql2" || fail "no REVOKE in the section: $sql2"
[ "$(awk '{print $2, $3, $5}' <<<"$hba_line")" = "shop shop_relay scram-sha-256" ] || fail "pg_hba line: $hba_line"
[[ "$pgpass_line" == "*:*:shop:shop_relay:"* ]] || fail "pgpass line: $pgpass_line"

start_postgres fsync=off wal_level=logical shared_preload_libraries=pg_once
psql -X -q -d postgres -c "CREATE DATABASE shop"
psql -X -q -v ON_ERROR_STOP=1 -d shop -c "CREATE EXTENSION pg_once" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d shop <<<"$sql1" >/dev/null || fail "the section's first SQL block failed"
hba="$ONCE_CLUSTER_DIR/data/pg_hba.conf"
{ awk '{print "local", $2, $3, $5}' <<<"$hba_line"; cat "$hba"; } >"$hba.new" && cat "$hba.new" >"$hba"
psql -X -q -d postgres -c "SELECT pg_reload_conf()" >/dev/null
CREDS="$T/creds"; mkdir -p "$CREDS"
echo "$pgpass_line" >"$CREDS/pgpass"
chmod 600 "$CREDS/pgpass"; [ "$(id -u)" = 0 ] && chown -R postgres: "$CREDS"; chmod 700 "$CREDS"
SHOP="host=$PGHOST port=$PGPORT dbname=shop user=shop_relay"
psql_shop() { psql -X -q -v ON_ERROR_STOP=1 -At -d shop "$@"; }

say "the password is required, and comes from the pgpass credential"
out=$(as_relay_user env PGPASSFILE=/nonexistent "$RELAY_BIN" --db "$SHOP" --sink stdout: --check-config 2>&1) &&
    fail "shop_relay logged in without a password: $out"
with_creds=(env CREDENTIALS_DIRECTORY="$CREDS" PGPASSFILE="$CREDS/pgpass")
out=$(as_relay_user "${with_creds[@]}" "$RELAY_BIN" --db "$SHOP" --sink stdout: --check-config 2>&1) ||
    fail "--check-config as shop_relay: $out"
grep -q "configuration OK" <<<"$out" || fail "--check-config: $out"

say "--create-wal-slot, then CREATE taken back and the database switched to the WAL"
out=$(as_relay_user "${with_creds[@]}" "$RELAY_BIN" --db "$SHOP" --create-wal-slot 2>&1) || fail "--create-wal-slot: $out"
psql -X -q -v ON_ERROR_STOP=1 -d shop <<<"$sql2" >/dev/null || fail "the section's second SQL block failed"
[ "$(psql_shop -c "SELECT has_database_privilege('shop_relay', 'shop', 'CREATE')")" = f ] || fail "shop_relay kept CREATE"

say "the relay streams as shop_relay with 7 connections"
mport=$(free_port)
RELAY_WRAP=("${with_creds[@]}")
start_relay shop --db "$SHOP" --sink stdout: --transport wal --metrics "127.0.0.1:$mport" --poll-interval 100ms
RELAY_WRAP=()
psql_shop -c "SELECT count(once.send('shop.order', jsonb_build_object('n', g), 'k' || g % 7)) FROM generate_series(1, 200) g" >/dev/null
[ "$(psql_shop -c "SELECT count(*) FROM once.outbox")" = 0 ] || fail "the messages became rows, not WAL"
once_wait_for "200 messages on stdout" 60 lines_have_ids "$T/relay-shop.out" 200 || fail "$(wc -l <"$T/relay-shop.out") lines"
conns() { psql_shop -c "SELECT count(*) FROM pg_stat_activity WHERE usename = 'shop_relay'"; }
seven() { [ "$(conns)" = 7 ]; }
once_wait_for "7 connections of shop_relay" 30 seven || fail "shop_relay holds $(conns) connections, docs say 7"
stop_relay shop
[ "$RELAY_RC" = 0 ] || fail "relay exit $RELAY_RC"
! grep -qF "change me" "$T/relay-shop.log" || fail "the password is in the log"
say "PASS"
