#!/usr/bin/env bash
# The Debian packages, installed for real: builds them (scripts/package, reused when the
# sources have not changed), installs postgresql-15-pg-once and once-relay into the system,
# runs CREATE EXTENSION (and checks the packaged update paths) in a throwaway cluster of
# the system's PostgreSQL 15 with shared_preload_libraries=pg_once, relays a message with
# /usr/bin/once-relay as the package's system user, verifies the installed systemd units,
# then purges both packages and checks that nothing is left. Needs root (CI runs as root):
# skipped otherwise, and skipped if pg_once is already installed on this system in any way,
# because the test removes what it installs. The EXIT trap purges whatever it installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${ONCE_SOURCE_DIR:=$(cd "$here/../.." && pwd)}" "${ONCE_BUILD_DIR:=$ONCE_SOURCE_DIR/build}"
skip() { echo "SKIP: $*"; exit 77; }   # CTest reports exit code 77 as skipped
[ "$(id -u)" = 0 ] || skip "installs packages into the system: run as root"

PG_VERSION=15
export PG_CONFIG=/usr/lib/postgresql/$PG_VERSION/bin/pg_config
[ -x "$PG_CONFIG" ] || skip "no PostgreSQL $PG_VERSION server dev files (scripts/setup installs them)"
PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)
EXTDIR=$("$PG_CONFIG" --sharedir)/extension
PACKAGES=(once-relay "postgresql-$PG_VERSION-pg-once")
RELAY_USER=once-relay
UNITDIR=$(pkg-config --variable=systemdsystemunitdir systemd)

# Several checkouts share this machine: one package test at a time.
exec 9>/run/lock/pg_once-package-install.lock
flock -w 600 9 || { echo "FAIL: another package install test holds the lock" >&2; exit 1; }

# Refuse to touch an existing installation: the purge at the end would remove it.
for p in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    case $status in "" | not-installed) ;; *) skip "package $p is on this system ($status)" ;; esac
done
for f in "$PKGLIBDIR"/pg_once.so "$EXTDIR"/pg_once.control /etc/once-relay /usr/bin/once-relay; do
    [ ! -e "$f" ] || skip "$f exists (pg_once installed from source?)"
done
! getent passwd "$RELAY_USER" >/dev/null || skip "user $RELAY_USER exists already"

T=$(mktemp -d "${TMPDIR:-/tmp}/package-install.XXXXXX")
chmod 755 "$T"
INSTALLED=0
RELAY_PID=
# The system's server, not a staged copy: the package is what is being tested.
export ONCE_STAGE_DIR=/
source "$ONCE_SOURCE_DIR/tests/lib/cluster.sh"

cleanup() {
    [ -n "$RELAY_PID" ] && { kill -9 "$RELAY_PID" 2>/dev/null || true; wait "$RELAY_PID" 2>/dev/null || true; }
    once_cluster_stop
    if [ "$INSTALLED" = 1 ]; then
        dpkg --purge "${PACKAGES[@]}" >"$T/purge-cleanup.log" 2>&1 || cat "$T/purge-cleanup.log" >&2
    fi
    if [ "${KEEP_TEST_DIR:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

say() { echo "[$(date +%T)] $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }

say "packages: scripts/package --if-stale"
out=$ONCE_BUILD_DIR/packages
"$ONCE_SOURCE_DIR/scripts/package" --out "$out" --if-stale
debs=()
for p in "${PACKAGES[@]}"; do
    f=$(ls "$out/${p}_"*.deb 2>/dev/null | head -1)
    [ -n "$f" ] || fail "no ${p}_*.deb in $out"
    debs+=("$f")
done

say "install ${debs[*]##*/}"
INSTALLED=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    -o DPkg::Lock::Timeout=300 "${debs[@]}" >"$T/install.log" 2>&1 ||
    { cat "$T/install.log" >&2; fail "apt-get install"; }

# What the packages put where.
ext_version=$(sed -n "s/^default_version *= *'\([0-9.]*\)'.*/\1/p" "$ONCE_SOURCE_DIR/sql/pg_once.control")
expected=("$PKGLIBDIR/pg_once.so" "$EXTDIR/pg_once.control" "$EXTDIR/pg_once--$ext_version.sql"
          /usr/bin/once-relay /etc/once-relay/relay.conf /usr/share/man/man1/once-relay.1.gz
          "$UNITDIR/once-relay.service" "$UNITDIR/once-relay@.service"
          /usr/share/doc/once-relay/copyright
          /usr/share/once-relay/monitoring/once-relay-alerts.yml /usr/share/once-relay/monitoring/once-relay-dashboard.json)
for f in "$ONCE_SOURCE_DIR"/sql/pg_once--*.sql; do expected+=("$EXTDIR/$(basename "$f")"); done
for f in "${expected[@]}"; do
    dpkg -S "$f" >/dev/null 2>&1 || fail "no package owns $f"
    [ -e "$f" ] || fail "$f is not installed"
done
dpkg-query -W -f='${Conffiles}\n' once-relay | grep -q ' /etc/once-relay/relay.conf ' ||
    fail "/etc/once-relay/relay.conf is not a conffile"
# relay.conf holds sink credentials: root may write it, the relay's group
# may read it, nobody else may read it (0.2 installed it 0644).
conf_mode() { stat -c '%a %U:%G' /etc/once-relay/relay.conf; }
[ "$(conf_mode)" = "640 root:$RELAY_USER" ] || fail "relay.conf is $(conf_mode), want 640 root:$RELAY_USER"
for p in "${PACKAGES[@]}"; do dpkg -L "$p" >>"$T/files.list"; done
uid=$(getent passwd "$RELAY_USER" | cut -d: -f3) || fail "postinst did not create user $RELAY_USER"
[ "$uid" -lt 1000 ] || fail "user $RELAY_USER is not a system user (uid $uid)"
getent group "$RELAY_USER" >/dev/null || fail "postinst did not create group $RELAY_USER"
/usr/bin/once-relay --version | grep -qx "once-relay .*" || fail "once-relay --version"

say "reinstall: relay.conf keeps 640 root:$RELAY_USER"
# An upgrade unpacks the conffile again (with the package's own owner and mode) and runs the
# postinst; installing the same version again does the same.
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall --no-install-recommends \
    -o DPkg::Lock::Timeout=300 "${debs[0]}" >"$T/reinstall.log" 2>&1 ||
    { cat "$T/reinstall.log" >&2; fail "apt-get install --reinstall"; }
[ "$(conf_mode)" = "640 root:$RELAY_USER" ] || fail "after reinstall relay.conf is $(conf_mode)"

say "cluster of the system's PostgreSQL $PG_VERSION with shared_preload_libraries=pg_once"
once_cluster_start fsync=off shared_preload_libraries=pg_once
[ "$(q -d postgres -c 'SHOW shared_preload_libraries')" = pg_once ] || fail "pg_once not preloaded"
q -d postgres -c "CREATE DATABASE shop"
q -d shop -c "CREATE EXTENSION pg_once" >/dev/null
[ "$(q -d shop -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_once'")" = "$ext_version" ] ||
    fail "CREATE EXTENSION did not install version $ext_version"
# The packaged update scripts lead from every shipped older version to the current one
# (running them on real data is the upgrade CTest's job; here: are they installed and named right).
stranded=$(q -d shop -c "SELECT string_agg(v.version, ', ') FROM pg_available_extension_versions v
                         WHERE v.name = 'pg_once' AND v.version <> '$ext_version'
                           AND NOT EXISTS (SELECT FROM pg_extension_update_paths('pg_once') p
                                           WHERE p.source = v.version AND p.target = '$ext_version'
                                             AND p.path IS NOT NULL)")
[ -z "$stranded" ] || fail "no packaged update path to $ext_version from: $stranded"

say "relay a message with /usr/bin/once-relay as user $RELAY_USER (stdout: sink)"
id=$(q -d shop -c "SELECT once.send('package.test', '{\"n\": 42}'::jsonb, 'k1')")
[ -n "$id" ] || fail "once.send returned nothing"
# setpriv execs the relay itself, so $! is the relay and SIGTERM reaches it.
setpriv --reuid="$RELAY_USER" --regid="$RELAY_USER" --clear-groups -- /usr/bin/once-relay \
    --db "host=$PGHOST port=$PGPORT user=postgres dbname=shop" --sink stdout: --name package-test \
    --poll-interval 200ms --maintenance off >"$T/relay.out" 2>"$T/relay.log" &
RELAY_PID=$!
relay_printed_message() { grep -q "$id" "$T/relay.out"; }
once_wait_for "the message on the relay's stdout" 30 relay_printed_message ||
    { cat "$T/relay.log" >&2; fail "message $id not relayed"; }
jq -e --arg id "$id" 'select(.id == $id) | .topic == "package.test" and .payload.n == 42' "$T/relay.out" >/dev/null ||
    fail "relayed line is not the message sent: $(cat "$T/relay.out")"
outbox_delivered() { [ "$(q -d shop -c 'SELECT count(*) FROM once.outbox WHERE dead_at IS NULL')" = 0 ]; }
once_wait_for "the relay to acknowledge the message" 30 outbox_delivered || fail "message not acknowledged"
kill -TERM "$RELAY_PID"
relay_rc=0; wait "$RELAY_PID" || relay_rc=$?
RELAY_PID=
[ "$relay_rc" = 0 ] || { cat "$T/relay.log" >&2; fail "once-relay exited with $relay_rc after SIGTERM"; }

say "the README's quick start, steps 3 to 5, as written (placeholders filled in)"
# Steps 1 and 2 (install the packages, preload and restart) are what this test did above.
quick=$(sed -n '/<!-- quickstart:begin/,/<!-- quickstart:end -->/p' "$ONCE_SOURCE_DIR/README.md")
quick_step() {
    grep -A1 "^# $1\. " <<<"$quick" | tail -n 1 | sed -e 's/YOUR_DB/quickstart/g' -e 's/YOUR_APP_ROLE/quickstart_app/g'
}
for n in 3 4 5; do [ -n "$(quick_step $n)" ] || fail "the README's quick start has no step $n"; done
# `sudo -u postgres CMD`: this test is root and reaches the throwaway cluster as postgres
# (PGHOST/PGPORT/PGUSER); the relay refuses root, so it runs as the package's user (exec: in
# the background step 5's $! is then the relay itself, which the test stops).
sudo() {
    [ "$1" = -u ] && shift 2
    if [ "$1" = once-relay ]; then
        shift
        exec setpriv --reuid="$RELAY_USER" --regid="$RELAY_USER" --clear-groups -- /usr/bin/once-relay "$@"
    else
        "$@"
    fi
}
q -d postgres -c "CREATE DATABASE quickstart" -c "CREATE ROLE quickstart_app LOGIN"
eval "$(quick_step 3)" >"$T/quick3.out" 2>&1 || { cat "$T/quick3.out" >&2; fail "quick start step 3"; }
eval "$(quick_step 4)" >"$T/quick4a.out" 2>&1 || { cat "$T/quick4a.out" >&2; fail "quick start step 4"; }
eval "$(quick_step 4)" >"$T/quick4b.out" 2>&1 || { cat "$T/quick4b.out" >&2; fail "quick start step 4, again"; }
grep -q '"hello": "you"' "$T/quick4a.out" || fail "step 4 did not answer the request: $(cat "$T/quick4a.out")"
[ "$(q -d quickstart -c "SELECT count(*) FROM once.keys WHERE key = 'request-1'")" = 1 ] ||
    fail "step 4 run twice stored the request more than once"
grep -Eq '^ *t *\|' "$T/quick4b.out" || fail "the second run of step 4 was not replayed: $(cat "$T/quick4b.out")"
eval "$(quick_step 5) --poll-interval 200ms --maintenance off" >"$T/quick5.out" 2>"$T/quick5.log" &
RELAY_PID=$!
quick_relayed() { [ "$(jq -r 'select(.topic == "hello.sent") | .id' "$T/quick5.out" 2>/dev/null | sort -u | wc -l)" = 2 ]; }
once_wait_for "the quick start's two messages on the relay's stdout" 30 quick_relayed ||
    { cat "$T/quick5.log" >&2; fail "step 5 did not relay the quick start's messages"; }
kill -TERM "$RELAY_PID"
relay_rc=0; wait "$RELAY_PID" || relay_rc=$?
RELAY_PID=
[ "$relay_rc" = 0 ] || { cat "$T/quick5.log" >&2; fail "the quick start's relay exited with $relay_rc after SIGTERM"; }
once_cluster_stop

say "systemd-analyze verify on the installed units"
# Probe first: a unit that cannot be wrong tells whether systemd-analyze works in this
# environment at all (it needs no running systemd, but it does need its unit search path).
printf '[Service]\nExecStart=/bin/true\n' >"$T/probe.service"
if ! probe=$(systemd-analyze verify "$T/probe.service" 2>&1); then
    fail "systemd-analyze cannot verify even a trivial unit here: $probe"
fi
# The template is verified through an instance, as systemd would load it.
ln -s "$UNITDIR/once-relay@.service" "$T/once-relay@shop.service"
# The instance with the systemd credentials drop-in docs/relay-operations.md shows.
mkdir -p "$T/once-relay@shop.service.d"
awk '/^#+ Credentials/ {s = 1} s && /^```ini/ {c = 1; next} c && /^```/ {exit} c {print}' \
    "$ONCE_SOURCE_DIR/docs/relay-operations.md" >"$T/once-relay@shop.service.d/credentials.conf"
grep -q '^LoadCredential=pgpass:' "$T/once-relay@shop.service.d/credentials.conf" || fail "no drop-in in docs/relay-operations.md"
grep -q '^Environment=PGPASSFILE=%d/pgpass$' "$UNITDIR/once-relay.service" || fail "the unit does not set PGPASSFILE=%d/pgpass"
verify_rc=0
verify=$(systemd-analyze verify "$UNITDIR/once-relay.service" "$T/once-relay@shop.service" 2>&1) ||
    verify_rc=$?
[ "$verify_rc" = 0 ] && [ -z "$verify" ] || fail "systemd-analyze verify (exit $verify_rc): $verify"

say "purge"
dpkg --purge "${PACKAGES[@]}" >"$T/purge.log" 2>&1 || { cat "$T/purge.log" >&2; fail "dpkg --purge"; }
INSTALLED=0
for p in "${PACKAGES[@]}"; do
    ! dpkg -L "$p" >/dev/null 2>&1 || fail "dpkg still lists files of $p after purge"
done
while IFS= read -r f; do
    [ -d "$f" ] || [ ! -e "$f" ] || fail "$f is left after purge"
done <"$T/files.list"
[ ! -e /etc/once-relay ] || fail "/etc/once-relay is left after purge"
! getent passwd "$RELAY_USER" >/dev/null || fail "user $RELAY_USER is left after purge"
! getent group "$RELAY_USER" >/dev/null || fail "group $RELAY_USER is left after purge"
left=$(find /etc "$UNITDIR" /var/lib/systemd /usr/share/man /usr/share/doc "$PKGLIBDIR" "$EXTDIR" \
    \( -name '*once-relay*' -o -name 'pg_once*' -o -name '*pg-once*' \) 2>/dev/null || true)
[ -z "$left" ] || fail "left after purge: $left"
say "OK: installed, used, verified and purged without a trace"
