#include "pg/common/locks.hpp"

#include "pg/common/guard.hpp"

extern "C" {
#include "access/twophase.h"
#include "common/hashfn.h"
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

namespace {
LOCKTAG once_tag(LockClass lock_class, uint32 hash) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(lock_class), hash, kOnceLockField4);
    return tag;
}
}  // namespace

bool try_lock_transaction(LockClass lock_class, uint32 hash) {
    return pg_call([&] {
        LOCKTAG tag = once_tag(lock_class, hash);
        return LockAcquire(&tag, ExclusiveLock, false /* transaction lock */, true /* don't wait */) !=
               LOCKACQUIRE_NOT_AVAIL;
    });
}

std::vector<std::pair<uint32, TransactionId>> held_by_prepared(LockClass lock_class) {
    std::vector<std::pair<uint32, TransactionId>> held;
    if (max_prepared_xacts == 0) return held;   // (the default: two-phase commit is off)
    pg_call([&] {
        LockData* data = GetLockStatusData();
        // A prepared transaction's locks belong to no process (pid 0). Its xid is the one of its
        // own transaction-id lock, which carries the same virtual transaction id.
        for (int i = 0; i < data->nelements; ++i) {
            const LockInstanceData& l = data->locks[i];
            const LOCKTAG& t = l.locktag;
            if (l.pid != 0 || t.locktag_type != LOCKTAG_ADVISORY || t.locktag_field1 != MyDatabaseId ||
                t.locktag_field2 != static_cast<uint32>(lock_class) || t.locktag_field4 != kOnceLockField4 ||
                (l.holdMask & LOCKBIT_ON(ExclusiveLock)) == 0)
                continue;
            TransactionId xid = InvalidTransactionId;
            for (int k = 0; k < data->nelements; ++k) {
                const LockInstanceData& x = data->locks[k];
                if (x.pid == 0 && x.locktag.locktag_type == LOCKTAG_TRANSACTION &&
                    compat::same_virtual_transaction(x, l)) {
                    xid = x.locktag.locktag_field1;
                    break;
                }
            }
            held.emplace_back(t.locktag_field3, xid);
        }
    });
    return held;
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
// purge. It is not an SQL advisory lock, which any role that can connect could take first so
// that no relay ran the timers; SQL cannot name this one.
ONCE_SQL_FUNCTION(once_relay_maintenance_lock) {
    PG_RETURN_BOOL(once::pg::try_lock_session(once::pg::LockClass::maintenance, 0));
}

// once._saga_define_lock(name): once.saga_define of one name at a time, so that two defines
// of the same definition cannot both store a version. Not an SQL advisory lock: any role that
// can connect could take that first and hold every saga_define of the name.
ONCE_SQL_FUNCTION(once_saga_define_lock) {
    text* name = PG_GETARG_TEXT_PP(0);
    const uint32 hash = hash_bytes(reinterpret_cast<const unsigned char*>(VARDATA_ANY(name)),
                                   static_cast<int>(VARSIZE_ANY_EXHDR(name)));
    once::pg::lock_transaction(once::pg::LockClass::saga_definition, hash);
    PG_RETURN_VOID();
}
