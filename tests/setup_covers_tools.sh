#!/usr/bin/env bash
# Every command the tests, scripts and examples call is installed by scripts/setup: for each
# command in the list below that appears in those files, the Debian package that provides it
# must be in scripts/setup's package list or in what those packages depend on (Recommends are
# not installed: setup uses --no-install-recommends), or be part of the base system
# (Priority: required/important). A command that a test calls and setup forgets is what made
# a fresh machine fail with "pg_prove: command not found".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Commands worth checking: everything not from coreutils/bash that a test or script runs.
tools=(pg_prove pg_isolation_regress pg_config pg_ctl initdb psql pg_basebackup nats-server jq curl
       openssl python3 node npm setpriv runuser lintian dpkg-buildpackage pg_buildext help2man
       systemd-analyze valgrind ip tc cmake make g++ git fakeroot dh sqlsmith pgbouncer)

words=$(grep -v '^\s*#' scripts/setup | sed 's/#.*//' | grep -o '[a-z0-9][a-z0-9.+-]*' | sort -u)
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
          --no-replaces --no-enhances $words 2>/dev/null | grep -v '^ ' | sed 's/:.*//' | sort -u)

fails=0; checked=0
for tool in "${tools[@]}"; do
    # Used = named as a word on a line that is not a comment, in a file that runs.
    grep -rsw --include='*.sh' --include='*.py' --include='*.js' --include='*.txt' \
        --include=run --include=rules --include=setup --include=build --include=test \
        --include=package --include=demo --exclude=setup_covers_tools.sh \
        -- "$tool" tests scripts examples .ci packaging 2>/dev/null \
        | grep -v ':\s*#' | grep -qv -- "--$tool" || continue
    path=$(command -v "$tool" 2>/dev/null || ls /usr/lib/postgresql/*/lib/pgxs/src/test/isolation/"$tool" \
           /usr/lib/postgresql/*/bin/"$tool" 2>/dev/null | head -n 1 || true)
    if [ -z "$path" ]; then
        echo "not ok - $tool is used but not installed on this machine"; fails=$((fails + 1)); continue
    fi
    pkg=
    for p in "$(readlink -f "$path")" "$path" "/${path#/usr/}"; do   # usrmerge: /usr/sbin is /sbin
        [ -n "$pkg" ] || pkg=$(dpkg -S "$p" 2>/dev/null | grep -v '^diversion' | head -n 1 | cut -d: -f1 || true)
    done
    checked=$((checked + 1))
    if [ -z "$pkg" ]; then
        # Not from a Debian package (e.g. the base image's own node/npm): setup must install
        # it when missing, which it says by naming the command.
        if grep -qw -- "$tool" scripts/setup; then echo "ok - $tool (outside dpkg; setup handles it)"
        else echo "not ok - $tool ($path) is from no package and scripts/setup does not mention it"; fails=$((fails + 1)); fi
        continue
    fi
    pkg=${pkg%%,*}   # a diverted file names several packages; the first provides it
    priority=$(dpkg-query -W -f='${Priority}' "$pkg" 2>/dev/null || true)
    if grep -qx -- "$pkg" <<<"$closure"; then
        echo "ok - $tool ($pkg)"
    elif [ "$priority" = required ] || [ "$priority" = important ]; then
        echo "ok - $tool ($pkg, base system)"
    else
        echo "not ok - $tool comes from $pkg, which scripts/setup does not install"; fails=$((fails + 1))
    fi
done
echo "# $checked tools checked"
[ "$fails" -eq 0 ] || { echo "setup_covers_tools: $fails tools missing from scripts/setup"; exit 1; }
echo "setup_covers_tools: all tools covered"
