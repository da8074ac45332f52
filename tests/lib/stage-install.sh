#!/usr/bin/env bash
# Stages a private copy of the PostgreSQL server with this build's pg_once installed:
#   tests/lib/stage-install.sh BUILD_DIR STAGE_DIR
# PostgreSQL finds its share and lib directories relative to its own binary (as in its own
# "make check"), so binaries copied to STAGE_DIR/<bindir> use STAGE_DIR/<sharedir>/extension
# and STAGE_DIR/<pkglibdir>. Nothing is installed into the system, and several checkouts can
# test side by side.
set -euo pipefail
build=$1
stage=$2
pg_config=${PG_CONFIG:-pg_config}
bindir=$("$pg_config" --bindir)
sharedir=$("$pg_config" --sharedir)
pkglibdir=$("$pg_config" --pkglibdir)

# The server tree is staged once; pg_once's own files are refreshed on every build.
if [ ! -x "$stage$bindir/postgres" ] || ! cmp -s "$bindir/postgres" "$stage$bindir/postgres"; then
    rm -rf "$stage"
    mkdir -p "$stage$bindir" "$stage$sharedir/extension" "$stage$pkglibdir"
    # Real files, not symlinks: PostgreSQL resolves symlinks when it looks for its own path.
    for f in "$bindir"/*; do
        ln "$f" "$stage$bindir/" 2>/dev/null || cp -p "$f" "$stage$bindir/"
    done
    for f in "$sharedir"/*; do
        [ "$(basename "$f")" = extension ] || ln -s "$f" "$stage$sharedir/"
    done
    for f in "$sharedir"/extension/* "$pkglibdir"/*; do
        case "$(basename "$f")" in pg_once*) continue ;; esac
        if [ "$(dirname "$f")" = "$pkglibdir" ]; then ln -s "$f" "$stage$pkglibdir/"; else ln -s "$f" "$stage$sharedir/extension/"; fi
    done
fi
rm -f "$stage$sharedir"/extension/pg_once* "$stage$pkglibdir"/pg_once*
DESTDIR="$stage" cmake --install "$build" --component Unspecified >/dev/null
test -f "$stage$pkglibdir/pg_once.so"
