#!/usr/bin/env bash
# Memory checker: runs pgTAP files against a server started under valgrind
# (--trace-children=yes, so every backend is checked) and fails on any invalid read, write or
# free. PostgreSQL's own USE_VALGRIND build is not needed for these: they are malloc-level
# errors (a freed plan context, a stale pointer), such as a use after free in once.run's plan
# cache. Uninitialised-byte reports are not counted: PostgreSQL writes
# struct padding to disk on purpose, and without its valgrind build those are noise.
#   tests/memcheck.sh                 # the default subset below (a few minutes)
#   tests/memcheck.sh tests/pgtap/*.sql
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib/cluster.sh"
command -v valgrind >/dev/null || { echo "memcheck: valgrind is not installed (scripts/setup)"; exit 1; }

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    for f in command_cache key_ownership once_locks outbox_message_id settings security idempotency_run \
             idempotency_keys guard; do
        files+=("$here/pgtap/$f.sql")
    done
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-memcheck.XXXXXX")
once_cluster_init "$dir"
chmod 755 "$dir"
[ "$(id -u)" = 0 ] && chown postgres: "$dir"
server_pid=
cleanup() {
    # (runuser does not pass signals on: stop the postmaster through its data directory)
    [ -n "$server_pid" ] && once_as_server_user pg_ctl stop -D "$dir/data" -m fast -w -t 120 >/dev/null 2>&1
    [ -n "$server_pid" ] && wait "$server_pid" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
once_as_server_user valgrind --quiet --trace-children=yes --error-limit=no --num-callers=30 \
    --undef-value-errors=no --log-file="$dir/valgrind.%p.log" \
    postgres -D "$dir/data" -c listen_addresses='' -c unix_socket_directories="$dir" -c port=5432 \
    -c max_connections=20 -c shared_buffers=32MB -c fsync=off -c max_stack_depth=2MB \
    -c shared_preload_libraries=pg_once -c wal_level=logical >"$dir/server.log" 2>&1 &
server_pid=$!
export PGHOST=$dir PGPORT=5432 PGUSER=postgres
once_wait_for "the server under valgrind" 300 pg_isready -q

status=0
for file in "${files[@]}"; do
    db="m_$(basename "$file" .sql)"
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE \"$db\"" \
        -c "\\c \"$db\"" -c "CREATE EXTENSION pgtap" -c "CREATE EXTENSION pg_once" >/dev/null 2>&1
    pg_prove -d "$db" "$file" || status=1
done

# Shut down first: processes write their last reports when they exit.
once_as_server_user pg_ctl stop -D "$dir/data" -m fast -w -t 120 >/dev/null
wait "$server_pid" 2>/dev/null || true
server_pid=
errors=$(cat "$dir"/valgrind.*.log | grep -cE "Invalid (read|write|free)|Mismatched free|Source and destination overlap" || true)
echo "# memcheck: $errors invalid read/write/free reports in $(ls "$dir"/valgrind.*.log | wc -l) traced processes"
if [ "$errors" -gt 0 ]; then
    grep -lE "Invalid (read|write|free)|Mismatched free" "$dir"/valgrind.*.log | head -3 | xargs -r cat
    status=1
fi
exit $status
