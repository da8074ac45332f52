#!/usr/bin/env bash
# The same benchmarks on each PostgreSQL server of the matrix, one after the other, with their
# ratios side by side: producer tx with once.send vs the same tx with a plain INSERT
# (1 and 16 clients), the claim_locked+ack drain vs a hand-written SKIP LOCKED DELETE drain, and
# the relay's drain to JetStream vs a bare libnats publisher. Each ratio is measured against
# its baseline in the same run on the same server; compare ratios, not absolute figures.
#   tests/bench/versions.sh                  15 and every built build/pgN
#   ONCE_PG_VERSIONS="15 18" BENCH_SECONDS=5 BACKLOG=50000 tests/bench/versions.sh
# Needs ./scripts/test (or scripts/build) to have built each server's build directory.
# Results: tests/bench/results/versions.txt (and each bench's own results-<version> files).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
versions=${ONCE_PG_VERSIONS:-15 $(cd "$root/build" 2>/dev/null && ls -d pg[0-9]* 2>/dev/null | sed 's/^pg//' | tr '\n' ' ')}
secs=${BENCH_SECONDS:-5}
backlog=${BACKLOG:-50000}
out=$here/results/versions.txt

ratio() {  # ratio FILE PATTERN: the "ratio N" or "| N |" figure of the first line matching PATTERN
    local line
    line=$(grep -m1 -F -- "$2" "$1" 2>/dev/null) || { echo "n/a"; return; }
    if [[ $line =~ ratio\ ([0-9.]+) ]]; then echo "${BASH_REMATCH[1]}"; else awk -F'|' '{gsub(/ /, "", $5); print $5}' <<<"$line"; fi
}

rows=()
for v in $versions; do
    suffix=; [ "$v" = 15 ] || suffix=-pg$v
    echo "=== PostgreSQL $v"
    ONCE_BENCH_PG=$v OUTBOX_BENCH_ONLY=producer OUTBOX_BENCH_SECONDS=$secs "$here/outbox.sh"
    ONCE_BENCH_PG=$v OUTBOX_BENCH_ONLY=drain OUTBOX_BENCH_SECONDS=$secs "$here/outbox.sh"
    ONCE_BENCH_PG=$v BENCH_ONLY=drain BENCH_SECONDS=$secs BACKLOG=$backlog "$here/relay.sh"
    p=$here/results/outbox_producer$suffix.txt d=$here/results/outbox_drain$suffix.txt r=$here/results/relay$suffix.txt
    server=$(sed -n 2p "$p" | cut -d, -f1)
    rows+=("| $v ($server) | $(ratio "$p" "producer (pg_once preloaded: coalesced NOTIFY), 1 client(s)") | $(ratio "$p" "producer (pg_once preloaded: coalesced NOTIFY), 16 client(s)") | $(ratio "$d" "drain: claim_locked+ack in one statement") | $(ratio "$r" "to JetStream vs hand-written libnats publisher") |")
done
{
    echo "PostgreSQL versions side by side, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, ${secs}s per run, relay backlog $backlog"
    echo
    echo "| server | producer once.send / INSERT, 1 client | the same, 16 clients | claim_locked+ack drain / SKIP LOCKED DELETE drain | relay drain to JetStream / libnats publisher |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
} | tee "$out"
