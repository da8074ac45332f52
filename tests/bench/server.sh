# Which PostgreSQL server a benchmark runs on (sourced by lib.sh and outbox.sh).
#   ONCE_BENCH_PG=18 tests/bench/outbox.sh   the server of build/pg18 (./scripts/test builds
#                                            it); results go to results/<name>-pg18.txt
# The default is Debian's 15 (build/), with results in results/<name>.txt, so that two
# versions' figures sit side by side and each ratio comes from one run on one server.
bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench_pg=${ONCE_BENCH_PG:-15}
if [ "$bench_pg" = 15 ]; then
    : "${ONCE_BUILD_DIR:=$bench_dir/../../build}"
    bench_suffix=
else
    : "${ONCE_BUILD_DIR:=$bench_dir/../../build/pg$bench_pg}"
    bench_suffix=-pg$bench_pg
    [ -f "$ONCE_BUILD_DIR/CMakeCache.txt" ] || {
        echo "no build for PostgreSQL $bench_pg in $ONCE_BUILD_DIR: ONCE_PG_VERSIONS=$bench_pg ./scripts/test builds it" >&2
        exit 1
    }
    PG_CONFIG=$(sed -n 's/^PG_CONFIG:FILEPATH=//p' "$ONCE_BUILD_DIR/CMakeCache.txt")
    export PG_CONFIG
fi
: "${ONCE_STAGE_DIR:=$ONCE_BUILD_DIR/stage}"
export ONCE_BUILD_DIR ONCE_STAGE_DIR

# bench_results NAME: the results file of NAME for this server.
bench_results() { echo "$bench_dir/results/$1$bench_suffix.txt"; }
