#include "wal/slot_health.hpp"

namespace once::relay::wal {

namespace {

// The commands an operator runs; the relay's --db is not repeated (it may hold a password).
std::string create_command(const std::string& slot) {
    return "once-relay --db <the relay's --db> --wal-slot " + slot + " --create-wal-slot";
}

}  // namespace

SlotAssessment assess_slot(const SlotReading& r, bool accept_slot_loss_on_failover) {
    SlotAssessment a;
    if (!r.exists) {
        a.verdict = SlotVerdict::missing;
        a.error = "the replication slot " + r.slot +
                  " does not exist; the relay does not create it by itself, because messages committed while no "
                  "slot existed are in no stream (they are lost). Create it (it streams messages committed from "
                  "then on) with: " + create_command(r.slot);
        return a;
    }
    if (r.wal_status == "lost" || !r.invalidation_reason.empty()) {
        a.verdict = SlotVerdict::lost;
        std::string why = "wal_status " + (r.wal_status.empty() ? std::string("NULL") : r.wal_status);
        if (!r.invalidation_reason.empty()) why += ", invalidation_reason " + r.invalidation_reason;
        a.error = "PostgreSQL invalidated the replication slot " + r.slot + " (" + why +
                  "): the WAL it still needed is removed, so the messages committed after its confirmed position " +
                  (r.confirmed_flush_lsn.empty() ? std::string("(unknown)") : r.confirmed_flush_lsn) +
                  " that were not published are lost, and so is every message committed until a new slot exists. "
                  "The relay does not recreate it by itself. Recreate it (new messages only) with: "
                  "once-relay --db <the relay's --db> --wal-slot " + r.slot + " --drop-wal-slot && " +
                  create_command(r.slot);
        return a;
    }
    if (r.server_version < kSlotSyncVersion && r.physical_senders > 0) {
        std::string risk = "the server has " + std::to_string(r.physical_senders) +
                           " physical replication connection(s) (standbys, pg_receivewal or a base backup), and "
                           "PostgreSQL before 17 cannot keep the logical slot " + r.slot +
                           " on a standby: after a promotion the new primary has no slot, and the messages "
                           "committed after the slot's last confirmation and not yet published are lost";
        if (!accept_slot_loss_on_failover) {
            a.verdict = SlotVerdict::unsafe_failover;
            a.error = "refusing the WAL transport: " + risk +
                      ". Pass --wal-accept-slot-loss-on-failover to accept that risk, or use the table transport "
                      "(docs/relay-operations.md, \"Failover, per version\")";
            return a;
        }
        a.warnings.push_back("--wal-accept-slot-loss-on-failover: " + risk);
    }
    if (r.server_version >= kSlotSyncVersion && r.failover && !*r.failover)
        a.warnings.push_back("the replication slot " + r.slot +
                             " was created without failover, so a standby does not keep it and a promotion loses "
                             "it; recreate it with --drop-wal-slot then --create-wal-slot (which sets failover on 17+)");
    if (r.wal_status == "unreserved")
        a.warnings.push_back("the replication slot " + r.slot +
                             " holds more WAL than max_slot_wal_keep_size (wal_status unreserved): the next "
                             "checkpoint may invalidate it and lose the messages the relay has not published yet");
    return a;
}

}  // namespace once::relay::wal
