#!/usr/bin/env bash
# A role without a pg_once grant gets a HINT that names the role to grant: with
# pg_once in shared_preload_libraries, PostgreSQL's own "permission denied for schema once"
# and "permission denied for function send" carry one. Nothing else changes: the role is
# still denied, and errors about other objects get no hint.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
once_cluster_start fsync=off shared_preload_libraries=pg_once
trap once_cluster_stop EXIT

psql -qX -v ON_ERROR_STOP=1 -d postgres >/dev/null 2>&1 <<'SQL'
CREATE EXTENSION pg_once;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN IN ROLE once_consumer;
CREATE ROLE "Carol" LOGIN;
CREATE SCHEMA private;
CREATE TABLE private.t (x int);
SQL

fail() { echo "FAIL: $*" >&2; exit 1; }
# error_of ROLE SQL: the psql error output (with VERBOSITY default: ERROR and HINT lines)
error_of() {
    psql -qX -U "$1" -d postgres -c "$2" 2>&1 >/dev/null || true
}

out=$(error_of alice "SELECT once.send('t', '{}')")
grep -q 'ERROR:  permission denied for schema once' <<<"$out" || fail "alice: $out"
grep -q 'HINT:  Grant the role a pg_once role: GRANT once_producer TO alice to send messages' <<<"$out" \
    || fail "alice gets no hint naming the grant: $out"
echo "ok - schema once: $(grep HINT <<<"$out")"

out=$(error_of bob "SELECT once.send('t', '{}')")
grep -q 'ERROR:  permission denied for function send' <<<"$out" || fail "bob: $out"
grep -q 'HINT:  once.send is granted to once_producer: GRANT once_producer TO bob.' <<<"$out" || fail "bob: $out"
echo "ok - function: $(grep HINT <<<"$out")"

out=$(error_of Carol "SELECT * FROM once.outbox_stats")
grep -q 'HINT:  Grant the role a pg_once role: GRANT once_producer TO "Carol"' <<<"$out" || fail "Carol: $out"
echo "ok - a quoted role name"

out=$(error_of alice "SELECT * FROM private.t")
grep -q 'ERROR:  permission denied for schema private' <<<"$out" || fail "private: $out"
if grep -q HINT <<<"$out"; then fail "another schema got a hint: $out"; fi
echo "ok - other schemas get no hint"

# Still denied: the hint changes the message, not the privileges.
n=$(psql -qAtX -d postgres -c "SELECT count(*) FROM once.outbox")
[ "$n" = 0 ] || fail "a message was sent: $n"
out=$(error_of bob "SELECT once.claim('r')")
grep -q 'HINT:  once.claim is granted to once_relay: GRANT once_relay TO bob.' <<<"$out" || fail "bob claim: $out"
echo "ok - nothing was sent; claim names once_relay"

# Under SET ROLE the login name is not the role that lacks the grant: the hint says <role>.
out=$(psql -qX -d postgres -c "SET ROLE alice" -c "SELECT once.send('t', '{}')" 2>&1 >/dev/null || true)
grep -q 'GRANT once_producer TO <role>' <<<"$out" || fail "SET ROLE: $out"
echo "ok - SET ROLE: the hint does not name the login role"
echo "permission_hint: all passed"
