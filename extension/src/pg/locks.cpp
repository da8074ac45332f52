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

}  // namespace once::pg
