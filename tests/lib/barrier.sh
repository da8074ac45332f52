# A start line for concurrency tests. Sessions started from a shell loop trickle in one by one;
# to make them race for real, each session's SQL begins with $once_barrier_pass, which waits
# on an advisory lock the test holds exclusively (in an open session on fd 3). The test waits
# until all N sessions are queued on it, then releases them together.
#
#   source tests/lib/cluster.sh; source tests/lib/barrier.sh; once_cluster_start ...
#   once_barrier_open                 # then close fd 3 in the EXIT trap: exec 3>&-
#   once_barrier_hold
#   ... start N sessions whose SQL begins with "$once_barrier_pass" ...
#   once_barrier_release_when N       # returns once they are all queued and released
#   (once_barrier_hold again for another round)

once_barrier_lock=4242
once_barrier_pass="SELECT pg_advisory_lock_shared($once_barrier_lock) IS NULL AS waited;
SELECT pg_advisory_unlock_shared($once_barrier_lock) AND false;"

once_barrier_open() {
    exec 3> >(psql -qX -d postgres >/dev/null)
}

# once_barrier_locks GRANTED COUNT: true when COUNT locks on the barrier have granted = GRANTED
# (read on every call: once_wait_for re-runs it).
once_barrier_locks() {
    test "$(psql -qtAX -d postgres -c "SELECT count(*) FROM pg_locks
             WHERE locktype = 'advisory' AND objid = $once_barrier_lock AND granted = $1")" = "$2"
}

once_barrier_hold() {
    echo "SELECT pg_advisory_lock($once_barrier_lock);" >&3
    once_wait_for "barrier held" 30 once_barrier_locks true 1
}

once_barrier_release_when() {
    once_wait_for "$1 sessions at the barrier" 60 once_barrier_locks false "$1"
    echo "SELECT pg_advisory_unlock($once_barrier_lock);" >&3   # go
}
