#!/usr/bin/env bash
# Upgrade paths: for every released version V that can reach the default version through the
# sql/pg_once--A--B.sql scripts, install V, ALTER EXTENSION UPDATE, and compare the schema with
# a fresh install of the default version: they must be identical. Also: DROP EXTENSION leaves
# nothing behind, and a reinstall gives the same schema.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
once_cluster_start fsync=off
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-upgrade.XXXXXX")
trap 'once_cluster_stop; rm -rf "$work"' EXIT

dump_schema() {  # a stable, comparable description of everything pg_once installs
    # pg_dump leaves extension members out, so the catalogs are described directly.
    psql -qtAX -v ON_ERROR_STOP=1 -d "$1" -f "$here/describe_extension.sql"
}

fails=0
check() {  # check NAME COMMAND...
    if "${@:2}"; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); fi
}

psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE fresh" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d fresh -c "CREATE EXTENSION pg_once" >/dev/null
default=$(psql -qtAX -d fresh -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_once'")
dump_schema fresh >"$work/fresh.sql"
check "fresh install of $default has objects" test -s "$work/fresh.sql"

# Every version that has an update path to the default version.
versions=$(psql -qtAX -d fresh -c "SELECT source FROM pg_extension_update_paths('pg_once')
                                   WHERE target = '$default' AND path IS NOT NULL AND source <> '$default'")
for v in $versions; do
    db="from_${v//./_}"
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $db" >/dev/null
    psql -qX -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION pg_once VERSION '$v'" \
        -c "ALTER EXTENSION pg_once UPDATE" >/dev/null
    dump_schema "$db" >"$work/$db.sql"
    check "$v updated to $default equals a fresh install" diff -u "$work/fresh.sql" "$work/$db.sql"
done
echo "# upgrade paths tested: $(echo $versions | wc -w) (versions before $default: ${versions:-none yet})"

# Every upgrade script in the tree is reachable (no orphan scripts with typos in their names).
for script in "$ONCE_SOURCE_DIR"/sql/pg_once--*--*.sql; do
    [ -e "$script" ] || continue
    name=$(basename "$script" .sql); from=${name#pg_once--}; from=${from%%--*}
    check "upgrade script $name starts from a known version" grep -qx "$from" <(echo "$versions")
done

# DROP EXTENSION removes everything but the cluster-wide roles; reinstalling is identical.
psql -qX -v ON_ERROR_STOP=1 -d fresh -c "DROP EXTENSION pg_once" >/dev/null
left=$(psql -qtAX -d fresh -c "SELECT count(*) FROM pg_namespace WHERE nspname = 'once'")
check "DROP EXTENSION removes schema once" test "$left" = 0
psql -qX -v ON_ERROR_STOP=1 -d fresh -c "CREATE EXTENSION pg_once" >/dev/null
dump_schema fresh >"$work/again.sql"
check "reinstall after DROP gives the same schema" diff -u "$work/fresh.sql" "$work/again.sql"
# One backend: use pg_once, drop and recreate it, use it again. Its saved plans point at the
# dropped tables and must be revalidated, not crash or hit the old relation.
same_backend() {
    psql -qtAX -v ON_ERROR_STOP=1 -d fresh \
        -c "SELECT (once.run('s', 'k', '{}', 'SELECT 1')).replayed" \
        -c "SELECT state FROM once.key_acquire('s', 'a', '{}')" \
        -c "DROP EXTENSION pg_once" -c "CREATE EXTENSION pg_once" \
        -c "SELECT (once.run('s', 'k', '{}', 'SELECT 1')).replayed" \
        -c "SELECT state FROM once.key_acquire('s', 'a', '{}')" | tr '\n' ' '
}
check "a backend keeps working across DROP/CREATE EXTENSION" test "$(same_backend)" = "f acquired f acquired "

[ "$fails" -eq 0 ] || { echo "upgrade: $fails checks failed"; exit 1; }
echo "upgrade: all checks passed"
