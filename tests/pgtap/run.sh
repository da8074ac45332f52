#!/usr/bin/env bash
# Runs every tests/pgtap/*.sql file with pg_prove against a throwaway cluster. Each file gets
# a fresh database with pgtap and pg_once, so files cannot leak state into each other.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
# wal_level = logical: outbox_wal_transport.sql decodes the WAL transport's messages.
once_cluster_start fsync=off wal_level=logical
trap once_cluster_stop EXIT

status=0
files=("$here"/*.sql)
[ $# -gt 0 ] && files=("$@")
for file in "${files[@]}"; do
    db="t_$(basename "$file" .sql)"
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE \"$db\"" \
        -c "\\c \"$db\"" -c "CREATE EXTENSION pgtap" -c "CREATE EXTENSION pg_once" >/dev/null
    pg_prove -d "$db" --failures "$file" || status=1
done
exit $status
