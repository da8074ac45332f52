#!/usr/bin/env bash
# Random SQL (sqlsmith) against a database with pg_once installed and rows in every table of
# schema once. sqlsmith builds random queries (SELECT, INSERT, UPDATE, DELETE, MERGE) from the
# catalog: it calls pg_once's functions with values taken from pg_once's tables and views and
# from everything else in the catalog. No backend may crash: the server log shows no process
# terminated by a signal and no crash restart, and the server still answers afterwards.
# It runs as the superuser, then as a login role with once_producer, once_consumer and
# once_relay (what a service account has). Each round runs in a fresh copy of the data set
# (CREATE DATABASE ... TEMPLATE), because sqlsmith runs in autocommit: its DML and pg_once's
# functions (purge, ack, discard, ...) change the data as it goes. The superuser's rounds take
# turns between the full catalog and a catalog focused on pg_once (sqlsmith_focus.sql: among
# ~3,000 built-in functions sqlsmith seldom picks one of pg_once's); the role's are focused.
#   SQLSMITH_SECONDS        total run time (default 60: 3/4 as superuser, 1/4 as the role)
#   SQLSMITH_ROUND_SECONDS  length of one round on one fresh copy (default 120)
#   SQLSMITH_SEED           seed of the first round (default random; printed); round n uses seed+n
#   SQLSMITH_MAX_QUERIES    queries per round at most (default: bounded by time only)
# A 30-minute run (docs/security.md, "Random SQL (sqlsmith)"):
#   SQLSMITH_SECONDS=1800 nice -n 10 tests/integration/sqlsmith.sh   (ONCE_STAGE_DIR etc. set)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/cluster.sh"
command -v sqlsmith >/dev/null || { echo "FAIL: sqlsmith is not installed (scripts/setup installs it)"; exit 1; }

total=${SQLSMITH_SECONDS:-60}
round_seconds=${SQLSMITH_ROUND_SECONDS:-120}
seed=${SQLSMITH_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000 ))}
max_queries=${SQLSMITH_MAX_QUERIES:-1000000000}
super_seconds=$(( total * 3 / 4 ))
role_seconds=$(( total - super_seconds ))

# track_functions: which of pg_once's functions the random queries reached (C and SQL).
# log_min_messages=log: most random queries fail, and logging each error wrote about 80,000
# lines a minute; a crash is logged at LOG ("terminated by signal", with the query).
once_cluster_start fsync=off shared_preload_libraries=pg_once track_functions=all log_min_messages=log
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-sqlsmith.XXXXXX")
trap 'once_cluster_stop; rm -rf "$work"' EXIT
sql() { psql -qtAX -v ON_ERROR_STOP=1 "$@"; }

fails=0
check() {  # check NAME COMMAND...
    if "${@:2}"; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); fi
}

# The data set: tests/upgrade/write_data.sql (every API of the extension) and
# sqlsmith_data.sql (what that leaves empty: inbox sources, delivered history, topic policies,
# saga replies; and failed, compensated and aborted sagas).
sql -d postgres -c "CREATE DATABASE smith_template"
sql -d smith_template -o /dev/null -c "CREATE EXTENSION pg_once" \
    -f "$here/../upgrade/write_data.sql" -f "$here/sqlsmith_data.sql" -f "$here/sqlsmith_focus.sql"
sql -d postgres -c "CREATE ROLE smith_app LOGIN IN ROLE once_producer, once_consumer, once_relay"
empty= tables=0
for t in $(sql -d smith_template -c "SELECT relname FROM pg_class WHERE relnamespace = 'once'::regnamespace AND relkind IN ('r', 'p') ORDER BY 1"); do
    tables=$((tables + 1))
    [ "$(sql -d smith_template -c "SELECT EXISTS (SELECT FROM once.$t)")" = t ] || empty+=" $t"
done
check "every table in schema once has rows (empty: ${empty:-none})" test -z "$empty"
echo "# data set: $tables tables in schema once, all with rows; seed $seed, $super_seconds s as superuser, $role_seconds s as smith_app"

server_pid=$(head -n 1 "$ONCE_CLUSTER_DIR/data/postmaster.pid")
# Exit code 1 is no crash: it is how a process ends on FATAL, and the postmaster logs it for a
# parallel worker (one ended by this script's pg_terminate_backend of sqlsmith's sessions, say,
# on 18 where the workers share their leader's application_name); any other code makes the
# postmaster restart every backend.
crash_pattern='terminated by signal|exited with exit code ([2-9]|[1-9][0-9]+)|terminating any other active server processes|all server processes terminated|PANIC:'
crashed() {  # what the postmaster logs when a backend dies by a signal or exits unexpectedly
    grep -E "$crash_pattern" \
        "$ONCE_CLUSTER_DIR/server.log"
}
smith_sessions_gone() {
    [ "$(sql -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'sqlsmith%'")" = 0 ]
}

# run_round USER MODE SECONDS DB SEED: one sqlsmith run on a fresh copy; its report in $work.
# MODE full: every function in the catalog; focused: pg_once's functions and the built-ins
# that make their argument types (sqlsmith_focus.sql).
round=0
run_round() {
    local user=$1 mode=$2 seconds=$3 db=$4 s=$5 rc=0 path="once, public"
    [ "$mode" = focused ] && path="smith_focus, pg_catalog, once, public"
    echo "# round $round: $user, $mode, ${seconds}s, seed $s"
    sql -d postgres -c "CREATE DATABASE $db TEMPLATE smith_template"
    # sqlsmith names tables, functions and types with their schema; once is on the
    # search_path as well, for anything named without one.
    sql -d postgres -c "ALTER DATABASE $db SET search_path = $path"
    timeout -s INT -k 30 "$seconds" sqlsmith --target="host=$PGHOST port=$PGPORT dbname=$db user=$user" \
        --seed="$s" --max-queries="$max_queries" --verbose >/dev/null 2>"$work/round$round.log" || rc=$?
    # 124: stopped by the time limit (SIGINT: sqlsmith prints its report and exits)
    [ "$rc" = 0 ] || [ "$rc" = 1 ] || [ "$rc" = 124 ] || echo "# round $round: sqlsmith exited with $rc"
    # After a crash the server is in recovery for a moment: wait until it answers (the
    # checks at the end report the crash).
    once_wait_for "the server to answer" 120 sql -d postgres -c "SELECT 1" || return 0
    # A query may outlive sqlsmith (it sets statement_timeout, but a query may reset it).
    sql -d postgres -o /dev/null -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'sqlsmith%'" || true
    once_wait_for "sqlsmith's sessions to end" 30 smith_sessions_gone || true
    # a session's function statistics are flushed when it ends
    sql -d "$db" -c "SELECT funcname FROM pg_stat_user_functions WHERE schemaname = 'once' AND calls > 0" \
        >>"$work/functions_called" || true
    sql -d postgres -c "DROP DATABASE $db WITH (FORCE)" || true
}

# run_as USER SECONDS MODE...: rounds of at most round_seconds, in turn in each MODE, until
# SECONDS have passed (every mode gets a round even in a short run).
run_as() {
    local user=$1 seconds=$2 first=$round
    shift 2
    local modes=("$@") i=0
    local deadline=$((SECONDS + seconds)) length=$(( (seconds + $# - 1) / $# ))
    [ "$length" -le "$round_seconds" ] || length=$round_seconds
    while [ "$SECONDS" -lt "$deadline" ]; do
        local left=$((deadline - SECONDS))
        run_round "$user" "${modes[i % $#]}" $((left < length ? left : length)) "smith_$round" $((seed + round))
        round=$((round + 1)) i=$((i + 1))
        if crashed >/dev/null; then break; fi
    done
    # queries: the report's count; a round killed before its report counts its progress marks
    local queries=0 n r
    for ((r = first; r < round; r++)); do
        n=$(sed -n 's/^queries: \([0-9]*\).*/\1/p' "$work/round$r.log" | tail -n 1)
        [ -n "$n" ] || n=$(grep -E '^[.etSC]+$' "$work/round$r.log" | tr -d '\n' | wc -c)
        queries=$((queries + n))
    done
    # error classes: sqlsmith's report has "count<TAB>first 80 characters of the message" per
    # class, counted from the round's start; it reports now and then, the last report counts
    for ((r = first; r < round; r++)); do
        awk -F '\t' '/^queries: / { delete n } /^[0-9]+\tERROR: / { n[$2] = $1 }
                     END { for (m in n) printf "%d\t%s\n", n[m], m }' "$work/round$r.log"
    done | awk -F '\t' '{ n[$2] += $1; t += $1 } END { for (m in n) printf "%d\t%s\n", n[m], m; print t + 0 > "/dev/stderr" }' \
        2>"$work/errors_total" | sort -rn >"$work/classes_$user"
    local errors
    errors=$(cut -f 1 "$work/errors_total")
    echo "# $user: $queries queries in $((round - first)) rounds, $errors failed with an error ($(wc -l <"$work/classes_$user") error classes); the most frequent:"
    head -n 12 "$work/classes_$user" | sed 's/^/#   /'
    grep -E "server closed the connection|terminating connection" "$work/classes_$user" | sed 's/^/#   lost session: /' || true
    local min=$((seconds * 2 > 20 ? seconds * 2 : 20))
    check "$user: sqlsmith ran $queries queries (at least $min)" test "$queries" -ge "$min"
}

run_as postgres "$super_seconds" full focused
if ! crashed >/dev/null; then run_as smith_app "$role_seconds" focused; fi

if crashed >/dev/null; then
    echo "# the crash in the server log, with the query that crashed ('Failed process was running'):"
    awk -v crash="$crash_pattern" '$0 ~ crash { p = 1; print; next }
         p && /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] / && !/DETAIL:/ { p = 0 } p' "$ONCE_CLUSTER_DIR/server.log" \
        | head -n 200 | sed 's/^/#   /'
    cp "$ONCE_CLUSTER_DIR/server.log" "${TMPDIR:-/tmp}/pg_once-sqlsmith-crash-server.log"
    echo "# server log kept in ${TMPDIR:-/tmp}/pg_once-sqlsmith-crash-server.log; seed $seed"
fi
check "no backend crashed (server log)" test -z "$(crashed)"
# (a crash restart keeps the postmaster and its start time: the server log is what shows it)
check "the postmaster is the one started (pid $server_pid)" test "$(head -n 1 "$ONCE_CLUSTER_DIR/data/postmaster.pid")" = "$server_pid"
check "the server answers" test "$(sql -d postgres -c "SELECT 1")" = 1
called=$(sort -u "$work/functions_called" | grep -c . || true)
echo "# pg_once functions that the random queries called: $called ($(sort -u "$work/functions_called" | paste -sd ' '))"
check "the random queries reached pg_once's functions" test "$called" -gt 0
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
