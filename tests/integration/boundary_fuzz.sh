#!/usr/bin/env bash
# Boundary fuzzing: every pg_once function, hostile arguments, several seeds. The server must
# never crash: after the run the session still answers and the server log shows no backend
# terminated by a signal. (Run with FUZZ_CALLS=2000 for a longer search.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
once_cluster_start fsync=off shared_preload_libraries=pg_once
log=$(mktemp)
trap 'once_cluster_stop; rm -f "$log"' EXIT
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE EXTENSION pg_once" >/dev/null

calls=${FUZZ_CALLS:-60}
for seed in 0.11 0.42 0.73; do
    if ! psql -qX -v ON_ERROR_STOP=1 -v seed="$seed" -v calls_per_function="$calls" -d postgres \
            -f "$here/boundary_fuzz.sql" >"$log" 2>&1; then
        echo "FAIL: seed $seed: the session died or the script failed. Last calls:"
        grep 'fuzz call' "$log" | tail -3
        tail -5 "$log"
        exit 1
    fi
    grep 'fuzz done' "$log" | sed "s/^.*NOTICE: */seed $seed: /"
done
if grep -E "terminated by signal|server process .* was terminated" "$ONCE_CLUSTER_DIR/server.log"; then
    echo "FAIL: a backend crashed"; exit 1
fi
test "$(psql -qtAX -d postgres -c 'SELECT 1')" = 1
echo "1 passed, 0 failed"
