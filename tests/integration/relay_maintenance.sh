#!/usr/bin/env bash
# Maintenance timers: with two relays (maintenance on), exactly one holds the advisory lock and
# calls once.purge() / once.saga_tick(); when it dies, the other takes over. --maintenance off
# never takes the lock.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres track_functions=all
lock_holders() {
    psql_src -c "SELECT string_agg(a.application_name, ',' ORDER BY a.application_name) FROM pg_locks l
                 JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.granted"
}
calls() {   # calls of once.<fn> seen by the statistics collector
    psql_src -c "SELECT pg_stat_clear_snapshot(); SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions
                 WHERE schemaname = 'once' AND funcname = '$1'" | tail -1
}
one_holder() { local h; h=$(lock_holders); [ -n "$h" ] && [ "${h/,/}" = "$h" ]; }
holder_is() { [ "$(lock_holders)" = "once-relay $1" ]; }
calls_above() { [ "$(calls "$1")" -gt "$2" ]; }

start_relay off --db "$SRC_DB" --sink stdout: --maintenance off --poll-interval 100ms
start_relay m1 --db "$SRC_DB" --sink stdout: --purge-interval 200ms --saga-tick-interval 100ms --poll-interval 100ms
once_wait_for "m1 holds the maintenance lock" 20 holder_is m1 || fail "holders: $(lock_holders)"
start_relay m2 --db "$SRC_DB" --sink stdout: --purge-interval 200ms --saga-tick-interval 100ms --poll-interval 100ms
once_wait_for "m2 connected" 20 relay_log_has m2 "connected to"
p0=$(calls purge)
once_wait_for "once.purge called" 20 calls_above purge "$p0" || fail "once.purge not called"
if [ "$(psql_src -c "SELECT to_regprocedure('once.saga_tick()') IS NOT NULL")" = t ]; then
    s0=$(calls saga_tick)
    once_wait_for "once.saga_tick called" 20 calls_above saga_tick "$s0" || fail "once.saga_tick not called"
fi
holder_is m1 || fail "lock holders: $(lock_holders) (want only m1)"
say "kill -9 the maintenance holder; m2 takes over"
kill9_relay m1
once_wait_for "m2 holds the maintenance lock" 20 holder_is m2 || fail "holders after the kill: $(lock_holders)"
stop_relay m2; stop_relay off
say "relay_maintenance: OK"
