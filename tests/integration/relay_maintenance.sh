#!/usr/bin/env bash
# Maintenance timers: with two relays (maintenance on), exactly one holds the timer lock
# (once.relay_maintenance_lock) and calls once.purge() / once.saga_tick(); the other says so in
# its log after ten intervals; when the holder dies, the other takes over. --maintenance off
# never takes the lock. A session holding 0.2's lock key with SQL's pg_advisory_lock changes
# nothing (had it been the relays' lock, no relay would run the timers).
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"

start_postgres track_functions=all
lock_holders() {
    psql_src -c "SELECT string_agg(a.application_name, ',' ORDER BY a.application_name) FROM pg_locks l
                 JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.granted
                   AND l.classid = 1835955246 AND l.objsubid = 28526"
}
calls() {   # calls of once.<fn> seen by the statistics collector
    psql_src -c "SELECT pg_stat_clear_snapshot(); SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions
                 WHERE schemaname = 'once' AND funcname = '$1'" | tail -1
}
one_holder() { local h; h=$(lock_holders); [ -n "$h" ] && [ "${h/,/}" = "$h" ]; }
holder_is() { [ "$(lock_holders)" = "once-relay $1" ]; }
calls_above() { [ "$(calls "$1")" -gt "$2" ]; }

say "a squatter holds 0.2's maintenance lock key with pg_advisory_lock"
psql -X -q -d src -c "SELECT pg_advisory_lock(7235937134113046529)" -c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
BG_PIDS+=($!)
squatting() { [ "$(psql_src -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
                                  AND classid = 1684747900 AND objid = 1608368129 AND objsubid = 1")" = 1 ]; }
once_wait_for "the squatter holds the old key" 20 squatting || fail "the squatter did not get the lock"
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
once_wait_for "m2 says another session runs the timers" 20 relay_log_has m2 "another session has held the timer lock" ||
    fail "m2 did not log that it waits for the timer lock"
say "kill -9 the maintenance holder; m2 takes over"
kill9_relay m1
once_wait_for "m2 holds the maintenance lock" 20 holder_is m2 || fail "holders after the kill: $(lock_holders)"
once_wait_for "m2 says it runs the timers now" 20 relay_log_has m2 "this relay now runs saga_tick and purge" ||
    fail "m2 did not log the takeover"
stop_relay m2; stop_relay off
say "relay_maintenance: OK"
