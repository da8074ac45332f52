#include "locks.hpp"

#include "guard.hpp"

extern "C" {
#include "storage/lock.h"
}

namespace once::pg {

void lock_transaction(LockClass lock_class, uint32 hash) {
    pg_call([&] {
        LOCKTAG tag;
        SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(lock_class), hash, kOnceLockField4);
        (void)LockAcquire(&tag, ExclusiveLock, false /* transaction lock */, false /* wait */);
    });
}

bool try_lock_session(LockClass lock_class, uint32 hash) {
    return pg_call([&] {
        LOCKTAG tag;
        SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(lock_class), hash, kOnceLockField4);
        LockAcquireResult r = LockAcquire(&tag, ExclusiveLock, true /* session lock */, true /* don't wait */);
        if (r == LOCKACQUIRE_ALREADY_HELD || r == LOCKACQUIRE_ALREADY_CLEAR)
            LockRelease(&tag, ExclusiveLock, true);  // one hold is enough: keep the count at 1
        return r != LOCKACQUIRE_NOT_AVAIL;
    });
}

}  // namespace once::pg

// once.relay_maintenance_lock(): the lock that makes one relay at a time run saga_tick and
// purge. 0.2's relays used pg_try_advisory_lock(bigint), which any role that can connect could
// take first, and then no relay ran the timers (issue 20, finding 13); SQL cannot name this one.
ONCE_SQL_FUNCTION(once_relay_maintenance_lock) {
    PG_RETURN_BOOL(once::pg::try_lock_session(once::pg::LockClass::maintenance, 0));
}
