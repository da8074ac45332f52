# Helpers for benchmarks: throwaway cluster, pgbench runs, results lines.
# Results are lines "name | clients | measured | baseline | ratio | target" in
# tests/bench/results/<bench>.txt; scripts/bench-table turns them into the README table.
here_bench=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here_bench/server.sh"   # ONCE_BENCH_PG: which server; bench_results NAME
source "$here_bench/../lib/cluster.sh"
BENCH_SECONDS=${BENCH_SECONDS:-10}

# bench_tps CLIENTS SCRIPT_FILE [DB]: transactions per second of a pgbench run.
bench_tps() {
    local clients=$1 script=$2 db=${3:-bench}
    pgbench -n -M prepared -T "$BENCH_SECONDS" -c "$clients" -j "$clients" -f "$script" "$db" 2>&1 |
        awk '/^tps = / { print int($3) }'
}

# bench_result FILE NAME CLIENTS MEASURED BASELINE TARGET: prints and records a ratio line.
# ratio = baseline / measured time per operation = measured_tps / baseline_tps.
bench_result() {
    local file=$1 name=$2 clients=$3 measured=$4 baseline=$5 target=$6
    local ratio
    ratio=$(awk -v m="$measured" -v b="$baseline" 'BEGIN { if (b > 0) printf "%.2f", m / b; else print "n/a" }')
    printf '%-52s | %3s | %9s | %9s | %5s | %s\n' "$name" "$clients" "$measured" "$baseline" "$ratio" "$target" | tee -a "$file"
}
