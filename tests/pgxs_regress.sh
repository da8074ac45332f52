#!/usr/bin/env bash
# The PGXS Makefile's REGRESS tests (what a packager's `make installcheck` runs), run with
# pg_regress against a throwaway cluster of the staged server.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib/cluster.sh"
once_cluster_start fsync=off
out=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-regress.XXXXXX")
trap 'once_cluster_stop; [ -n "${KEEP_REGRESS_OUT:-}" ] || rm -rf "$out"' EXIT
tests=$(sed -n 's/^REGRESS *= *//p' "$here/../extension/Makefile")
pg_regress=$(dirname "$(pg_config --pgxs)")/../test/regress/pg_regress
"$pg_regress" --inputdir="$here/../extension/test" --outputdir="$out" \
    --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" --dbname=contrib_regression \
    $tests || { cat "$out/regression.diffs" 2>/dev/null; exit 1; }
