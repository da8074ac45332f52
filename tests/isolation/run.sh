#!/usr/bin/env bash
# Runs PostgreSQL's isolation tester on tests/isolation/specs/*.spec (or the names given):
# deterministic interleavings of concurrent sessions, compared with expected/NAME.out.
# To accept a new or changed spec's output after reading it:
#   ONCE_ISOLATION_ACCEPT=1 tests/isolation/run.sh NAME
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
regress="$(pg_config --pkglibdir)/pgxs/src/test/isolation/pg_isolation_regress"

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for spec in "$here"/specs/*.spec; do names+=("$(basename "$spec" .spec)"); done
fi
[ ${#names[@]} -gt 0 ] || { echo "no isolation specs"; exit 0; }

if [ "${ONCE_ISOLATION_ACCEPT:-}" = 1 ]; then
    for n in "${names[@]}"; do [ -f "$here/expected/$n.out" ] || : >"$here/expected/$n.out"; done
fi

once_cluster_start fsync=off
out=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-isolation.XXXXXX")
trap 'once_cluster_stop; rm -rf "$out"' EXIT
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE isolation_regression" \
    -c '\c isolation_regression' -c "CREATE EXTENSION pg_once" >/dev/null

status=0
"$regress" --use-existing --host="$PGHOST" --port="$PGPORT" --user=postgres \
    --dbname=isolation_regression --bindir="$ONCE_PG_BINDIR" \
    --inputdir="$here" --outputdir="$out" "${names[@]}" || status=$?
if [ "$status" -ne 0 ]; then
    [ -f "$out/regression.diffs" ] && cat "$out/regression.diffs"
    if [ "${ONCE_ISOLATION_ACCEPT:-}" = 1 ]; then
        for n in "${names[@]}"; do cp "$out/results/$n.out" "$here/expected/$n.out"; done
        echo "accepted new expected output for: ${names[*]}"
        status=0
    fi
fi
exit $status
