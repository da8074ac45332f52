// The verdict on the WAL transport's slot (wal/slot_health.hpp): when the stream must stay
// closed, what the operator is told, and what only warns.
#include "wal/slot_health.hpp"

#include <gtest/gtest.h>

using namespace once::relay::wal;

namespace {

SlotReading usable(int version = 150000) {
    SlotReading r;
    r.slot = "once_relay";
    r.exists = true;
    r.wal_status = "reserved";
    r.confirmed_flush_lsn = "0/1A2B3C8";
    r.server_version = version;
    if (version >= kSlotSyncVersion) r.failover = true;
    return r;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(WalSlotHealth, AHealthySlotIsUsableWithoutWarnings) {
    SlotAssessment a = assess_slot(usable(), false);
    EXPECT_EQ(a.verdict, SlotVerdict::usable);
    EXPECT_TRUE(a.error.empty());
    EXPECT_TRUE(a.warnings.empty());
    EXPECT_EQ(assess_slot(usable(180000), false).verdict, SlotVerdict::usable);
}

TEST(WalSlotHealth, AMissingSlotIsNotCreatedAndTheErrorNamesTheCommand) {
    SlotReading r = usable();
    r.exists = false;
    SlotAssessment a = assess_slot(r, true);
    EXPECT_EQ(a.verdict, SlotVerdict::missing);
    EXPECT_TRUE(has(a.error, "does not exist")) << a.error;
    EXPECT_TRUE(has(a.error, "--wal-slot once_relay --create-wal-slot")) << a.error;
}

TEST(WalSlotHealth, AnInvalidatedSlotIsLostWithWhatWasLostAndTheCommandToRecreateIt) {
    SlotReading r = usable();
    r.wal_status = "lost";
    SlotAssessment a = assess_slot(r, false);
    EXPECT_EQ(a.verdict, SlotVerdict::lost);
    EXPECT_TRUE(has(a.error, "invalidated the replication slot once_relay (wal_status lost)")) << a.error;
    EXPECT_TRUE(has(a.error, "after its confirmed position 0/1A2B3C8")) << a.error;
    EXPECT_TRUE(has(a.error, "--drop-wal-slot && once-relay")) << a.error;
    EXPECT_TRUE(has(a.error, "--create-wal-slot")) << a.error;
    EXPECT_FALSE(has(a.error, "password")) << "never the conninfo";
}

TEST(WalSlotHealth, AnInvalidationReasonOn17MakesTheSlotLostWhateverItsWalStatus) {
    SlotReading r = usable(170000);
    r.wal_status = "";   // NULL once invalidated for rows_removed
    r.invalidation_reason = "rows_removed";
    SlotAssessment a = assess_slot(r, false);
    EXPECT_EQ(a.verdict, SlotVerdict::lost);
    EXPECT_TRUE(has(a.error, "wal_status NULL, invalidation_reason rows_removed")) << a.error;
}

TEST(WalSlotHealth, PhysicalStandbysBefore17AreRefusedUnlessTheRiskIsAccepted) {
    SlotReading r = usable(150000);
    r.physical_senders = 1;
    SlotAssessment refused = assess_slot(r, false);
    EXPECT_EQ(refused.verdict, SlotVerdict::unsafe_failover);
    EXPECT_TRUE(has(refused.error, "--wal-accept-slot-loss-on-failover")) << refused.error;
    EXPECT_TRUE(has(refused.error, "not yet published are lost")) << refused.error;
    SlotAssessment accepted = assess_slot(r, true);
    EXPECT_EQ(accepted.verdict, SlotVerdict::usable);
    ASSERT_EQ(accepted.warnings.size(), 1u);
    EXPECT_TRUE(has(accepted.warnings[0], "--wal-accept-slot-loss-on-failover")) << accepted.warnings[0];
}

TEST(WalSlotHealth, PhysicalStandbysOn17AndLaterAreAllowedButASlotWithoutFailoverWarns) {
    SlotReading r = usable(180000);
    r.physical_senders = 2;
    SlotAssessment a = assess_slot(r, false);
    EXPECT_EQ(a.verdict, SlotVerdict::usable);
    EXPECT_TRUE(a.warnings.empty());
    r.failover = false;
    a = assess_slot(r, false);
    EXPECT_EQ(a.verdict, SlotVerdict::usable);
    ASSERT_EQ(a.warnings.size(), 1u);
    EXPECT_TRUE(has(a.warnings[0], "without failover")) << a.warnings[0];
}

TEST(WalSlotHealth, AnUnreservedSlotWarnsThatTheNextCheckpointMayInvalidateIt) {
    SlotReading r = usable();
    r.wal_status = "unreserved";
    SlotAssessment a = assess_slot(r, false);
    EXPECT_EQ(a.verdict, SlotVerdict::usable);
    ASSERT_EQ(a.warnings.size(), 1u);
    EXPECT_TRUE(has(a.warnings[0], "max_slot_wal_keep_size")) << a.warnings[0];
}
