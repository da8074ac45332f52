// Whether the WAL transport may stream its slot, decided before every stream open from what
// PostgreSQL says about the slot and the server (PgWalStore::read_slot). Pure logic, so each
// verdict and its message are unit-tested.
//
//  * missing: no slot of that name. The relay never creates it by itself: messages committed
//    while no slot existed are in no stream, and a slot made silently would hide that.
//  * lost: PostgreSQL invalidated it (wal_status 'lost', or invalidation_reason on 17+). The
//    WAL it needed is removed; messages in it that were not yet published are gone.
//  * unsafe_failover: the server (before 17) cannot keep a logical slot on a standby and has
//    physical standbys connected; a promotion would lose the slot and the messages committed
//    after its last confirmation. Refused unless the operator accepts that risk.
// Anything else is usable, with warnings (WAL about to be removed; a 17+ slot without failover).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace once::relay::wal {

struct SlotReading {
    std::string slot;
    bool exists = false;
    std::string wal_status;            // reserved | extended | unreserved | lost; "" when NULL
    std::string invalidation_reason;   // PostgreSQL 17+; "" when none
    std::optional<bool> failover;      // PostgreSQL 17+: the slot's failover flag
    std::string confirmed_flush_lsn;   // "" when NULL
    int server_version = 0;            // server_version_num
    int physical_senders = 0;          // WAL senders without a database: standbys, pg_receivewal, base backups
};

enum class SlotVerdict { usable = 0, missing = 1, lost = 2, unsafe_failover = 3 };

struct SlotAssessment {
    SlotVerdict verdict = SlotVerdict::usable;
    std::string error;                   // why the stream stays closed (not usable), for the log
    std::vector<std::string> warnings;   // usable, but the operator should know
};

SlotAssessment assess_slot(const SlotReading& r, bool accept_slot_loss_on_failover);

// The first PostgreSQL version that keeps logical slots on standbys (sync_replication_slots).
inline constexpr int kSlotSyncVersion = 170000;

}  // namespace once::relay::wal
