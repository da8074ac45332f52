#!/usr/bin/env bash
# Upgrades, the way a user meets them:
#  1. Catalog: for every released version V (tests/upgrade/releases), a database created at V
#     and updated with ALTER EXTENSION pg_once UPDATE has exactly the catalog of a fresh
#     install of the current version.
#  2. Data: V's own library (built from V's release commit) writes data through every API;
#     the new library is put in place (a package upgrade) and refuses the old SQL objects
#     clearly until ALTER EXTENSION UPDATE; after it, that data still works (keys replay,
#     messages in flight ack, dead letters redrive, inbox duplicates are caught, sagas finish).
#     On a PostgreSQL major that V's library does not build on (tests/upgrade/releases), the
#     current library installs V, updates it, and the data written then works.
#  3. V's committed script (sql/pg_once--V.sql) is byte for byte what V's build produced.
#  4. DROP EXTENSION leaves nothing behind, and a reinstall gives the same catalog.
#  5. The upgrade script into the current version creates each object once (a diff, not a
#     log of the changes made while the version was written).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pg_config=$(command -v "${PG_CONFIG:-pg_config}")   # the system's, before the staged server is on PATH
source "$here/../lib/cluster.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-upgrade.XXXXXX")
chmod 755 "$work"   # the server user runs the old server tree staged in it
trap 'once_cluster_stop; rm -rf "$work"' EXIT
bindir=$("$pg_config" --bindir)
server_major=$("$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
pkglibdir=$("$pg_config" --pkglibdir)
new_path=$PATH   # cluster.sh put the staged (current) server first

dump_schema() {  # a stable, comparable description of everything pg_once installs
    # pg_dump leaves extension members out, so the catalogs are described directly.
    psql -qtAX -v ON_ERROR_STOP=1 -d "$1" -f "$here/describe_extension.sql"
}

fails=0
check() {  # check NAME COMMAND...
    if "${@:2}"; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); fi
}

once_cluster_start fsync=off shared_preload_libraries=pg_once
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE fresh" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d fresh -c "CREATE EXTENSION pg_once" >/dev/null
default=$(psql -qtAX -d fresh -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_once'")
dump_schema fresh >"$work/fresh.sql"
check "fresh install of $default has objects" test -s "$work/fresh.sql"

once_cluster_stop

# The upgrade scripts into the current version are diffs: each object created once in each
# (created_once.py), however many changes it went through before the release.
for script in "$ONCE_SOURCE_DIR"/sql/pg_once--*--"$default".sql; do
    check "$(basename "$script") creates each object once" "$here/created_once.py" "$script"
done

# Every released version before the current one, with the commit it was released from.
released=$(grep -v '^#' "$here/releases" | awk -v cur="$default" '$1 != cur')
versions=$(awk '{print $1}' <<<"$released")

# build_release V COMMIT: V's library and V's generated script, built from its release commit
# with its own PGXS Makefile (cached in the build tree: a release never changes).
build_release() {
    local v=$1 commit=$2 out="$ONCE_BUILD_DIR/released/$1"
    if [ ! -f "$out/pg_once.so" ] || [ "$(cat "$out/commit" 2>/dev/null)" != "$commit" ]; then
        rm -rf "$out" && mkdir -p "$out/src"
        git -C "$ONCE_SOURCE_DIR" archive "$commit" extension sql | tar -x -C "$out/src" || {
            echo "cannot read release $v ($commit) from git: the upgrade test needs the history"; return 1; }
        make -C "$out/src/extension" -j2 PG_CONFIG="$pg_config" >"$out/build.log" 2>&1 || {
            tail -20 "$out/build.log"; return 1; }
        cp "$out/src/extension/pg_once.so" "$out/pg_once.so"
        cp "$out/src/extension/pg_once--$v.sql" "$out/pg_once--$v.sql"
        echo "$commit" >"$out/commit"
    fi
}

# chain_only V: V's SQL with the current library, then the update; the data then written works.
chain_only() {
    local v=$1 db="chain_${1//./_}"
    echo "# $v's library does not build on PostgreSQL $server_major: the SQL upgrade chain with the current library"
    once_cluster_start fsync=off shared_preload_libraries=pg_once
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $db" >/dev/null
    check "the current library installs $v" \
        psql -qX -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION pg_once VERSION '$v'" -o /dev/null
    check "$v updates to $default" psql -qX -v ON_ERROR_STOP=1 -d "$db" -c "ALTER EXTENSION pg_once UPDATE" -o /dev/null
    dump_schema "$db" >"$work/$db.sql"
    check "$v updated to $default equals a fresh install" diff -u "$work/fresh.sql" "$work/$db.sql"
    check "data written through every API after the update" \
        psql -qX -v ON_ERROR_STOP=1 -d "$db" -o /dev/null -f "$here/write_data.sql"
    check_data_works "$v" "$db" "$v, updated, then data written"
    once_cluster_stop
}

# check_data_works V DB [LABEL]: every check of check_data.sql passes on DB (its labels say
# "before the update": with the old library's data that is what they check).
check_data_works() {
    local v=$1 db=$2 label=${3:-$1 data}
    psql -qtAX -v ON_ERROR_STOP=1 -d "$db" -f "$here/check_data.sql" >"$work/$db.checks" 2>&1 || true
    grep -E '^(ok|not ok)' "$work/$db.checks" | sed "s/^\(ok\|not ok\) - /&$label: /"
    local n_ok n_all
    n_ok=$(grep -c '^ok' "$work/$db.checks" || true)
    n_all=$(grep -c "|| ' - " "$here/check_data.sql")
    check "$label: works ($n_ok of $n_all checks)" test "$n_ok" = "$n_all"
    grep -q '^ok' "$work/$db.checks" || cat "$work/$db.checks"
}

while read -r v commit majors; do
    [ -n "$v" ] || continue
    if ! grep -qw "$server_major" <<<"$majors"; then
        chain_only "$v"
        continue
    fi
    build_release "$v" "$commit"
    check "sql/pg_once--$v.sql is $v as released" cmp -s "$ONCE_SOURCE_DIR/sql/pg_once--$v.sql" \
        "$ONCE_BUILD_DIR/released/$v/pg_once--$v.sql"

    # V's server tree: the staged one with V's library in place of the current one.
    old_stage="$work/stage-$v"
    cp -a "$ONCE_STAGE_DIR" "$old_stage"
    rm -f "$old_stage$pkglibdir/pg_once.so"
    cp "$ONCE_BUILD_DIR/released/$v/pg_once.so" "$old_stage$pkglibdir/pg_once.so"

    PATH="$old_stage$bindir:$new_path"
    once_cluster_start fsync=off shared_preload_libraries=pg_once
    db="from_${v//./_}"
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $db" >/dev/null
    psql -qX -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION pg_once VERSION '$v'" >/dev/null
    check "$v's library writes data through every API" \
        psql -qX -v ON_ERROR_STOP=1 -d "$db" -o /dev/null -f "$here/write_data.sql"

    # The package upgrade: the new library replaces V's; the SQL objects are still V's.
    once_as_server_user pg_ctl stop -D "$ONCE_CLUSTER_DIR/data" -m fast -w >/dev/null
    PATH=$new_path
    once_cluster_run "$ONCE_CLUSTER_DIR" fsync=off shared_preload_libraries=pg_once
    refused=$(psql -qtAX -d "$db" -c "SELECT once.send('x.y', '{}')" 2>&1 || true)
    check "the new library refuses $v's SQL objects until the update (ON001)" \
        grep -q "run ALTER EXTENSION pg_once UPDATE\|ALTER EXTENSION pg_once UPDATE" <<<"$refused"
    psql -qX -v ON_ERROR_STOP=1 -d "$db" -c "ALTER EXTENSION pg_once UPDATE" >/dev/null
    dump_schema "$db" >"$work/$db.sql"
    check "$v updated to $default equals a fresh install" diff -u "$work/fresh.sql" "$work/$db.sql"
    check_data_works "$v" "$db"
    once_cluster_stop
done <<<"$released"
echo "# upgrade paths tested: $(echo $versions | wc -w) (versions before $default: ${versions:-none yet})"
once_cluster_start fsync=off shared_preload_libraries=pg_once
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE fresh" -c "\\c fresh" \
    -c "CREATE EXTENSION pg_once" >/dev/null

# The new library can install an old version (its script may call pg_once's functions), then
# refuses to serve it until the update.
for v in $versions; do
    db="new_lib_${v//./_}"
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $db" >/dev/null
    check "the new library installs $v" psql -qX -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION pg_once VERSION '$v'"
    check "... refuses to serve $v (ON001)" grep -q "ALTER EXTENSION pg_once UPDATE" \
        <<<"$(psql -qtAX -d "$db" -c "SELECT once.send('x.y', '{}')" 2>&1 || true)"
    check "... and serves it after the update" psql -qX -v ON_ERROR_STOP=1 -d "$db" \
        -c "ALTER EXTENSION pg_once UPDATE" -c "SELECT once.send('x.y', '{}')" >/dev/null
done

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
