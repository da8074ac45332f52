// pg_once's own transaction-scoped locks.
//
// Not SQL's advisory locks: any role that can connect could take the same lock with
// pg_advisory_lock and block once.run / once.send for that key. These locks are
// LOCKTAG_ADVISORY tags (so they show in pg_locks as locktype
// 'advisory', and wait in the deadlock detector like any lock), but with field4 = kOnceLockField4:
// SQL's advisory functions only ever build field4 = 1 (one bigint key) or 2 (two int4 keys), so
// no SQL statement can take, wait for or release these locks.
#pragma once

#include "core/names.hpp"
#include "pg/common/postgres_headers.hpp"

#include <utility>
#include <vector>

namespace once::pg {

// pg_locks.objsubid of every pg_once lock. Not 1 or 2 (SQL's advisory locks).
constexpr uint16 kOnceLockField4 = 0x6f6e;  // "on"

// Lock classes (pg_locks.classid): which pg_once structure the hash belongs to.
enum class LockClass : uint32 {
    // (values defined once in core/names.hpp)
    idempotency_key = static_cast<uint32>(kIdempotencyLockClass),  // once.run / once.key_* on hash(scope, key)
    outbox_key = static_cast<uint32>(kOutboxKeyLockClass),  // outbox per-key order (pre-commit step)
    maintenance = static_cast<uint32>(kMaintenanceLockClass),  // the relays' timers (hash 0)
    saga_definition = static_cast<uint32>(kSagaDefinitionLockClass),  // once.saga_define on hash(name)
};

// Exclusive, held to the end of the transaction (like pg_advisory_xact_lock). May ereport:
// call it from C++ frames through pg_call or let the helper do so (it does).
void lock_transaction(LockClass lock_class, uint32 hash);

// Like lock_transaction, but only if no other transaction holds it: never waits.
bool try_lock_transaction(LockClass lock_class, uint32 hash);

// Every hash of lock_class that a prepared transaction (two-phase commit) holds in this
// database, with that transaction's xid. A prepared transaction keeps its locks until COMMIT /
// ROLLBACK PREPARED, which may be never. Reads the whole lock table: call it rarely (it returns
// at once when max_prepared_transactions is 0, the default).
std::vector<std::pair<uint32, TransactionId>> held_by_prepared(LockClass lock_class);

// Held by this session until it ends, if no other session holds it: true when this session
// holds it (also when it already did). Never waits.
bool try_lock_session(LockClass lock_class, uint32 hash);

}  // namespace once::pg
