// A committed stream transaction's visibility to a snapshot (wal/commit_visibility.hpp).
#include "wal/commit_visibility.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace once::relay::wal;

TEST(WalCommitVisibility, ParsesASnapshotsText) {
    SnapshotXids s = parse_snapshot("741:745:741,743");
    EXPECT_EQ(s.xmin, 741u);
    EXPECT_EQ(s.xmax, 745u);
    EXPECT_EQ(s.xip, (std::vector<uint64_t>{741, 743}));
    EXPECT_TRUE(parse_snapshot("10:10:").xip.empty());
    EXPECT_EQ(parse_snapshot("8589934592:8589934600:").xmax, 8589934600u);   // epoch 2
}

TEST(WalCommitVisibility, RefusesWhatIsNotASnapshot) {
    for (const char* bad : {"", "1", "1:2", "a:2:", "1:2:x", "1:2:3,", "5:4:", "1:2:3,,4", "-1:2:"})
        EXPECT_THROW(parse_snapshot(bad), std::invalid_argument) << bad;
}

TEST(WalCommitVisibility, VisibleBelowXmaxUnlessStillRunning) {
    SnapshotXids s = parse_snapshot("741:745:741,743");
    EXPECT_TRUE(committed_xid_visible(740, s));
    EXPECT_FALSE(committed_xid_visible(741, s));   // committed and flushed, not yet out of the running set
    EXPECT_TRUE(committed_xid_visible(742, s));
    EXPECT_FALSE(committed_xid_visible(743, s));
    EXPECT_TRUE(committed_xid_visible(744, s));
    EXPECT_FALSE(committed_xid_visible(745, s));   // at xmax: ended after the snapshot's latest completed
    EXPECT_FALSE(committed_xid_visible(900, s));
}

TEST(WalCommitVisibility, PlacesThe32BitXidInItsEpochAcrossTheWrap) {
    // xmax just past a wrap of the 32-bit counter (epoch 1, low bits 5); xid 0xFFFFFFF0 is epoch 0's.
    const uint64_t epoch1 = uint64_t(1) << 32;
    SnapshotXids s{epoch1 - 0x20, epoch1 + 5, {epoch1 - 0x11, epoch1 + 3}};
    EXPECT_TRUE(committed_xid_visible(0xFFFFFFF0u, s));
    EXPECT_FALSE(committed_xid_visible(0xFFFFFFF0u, SnapshotXids{epoch1 - 0x20, epoch1 + 5, {epoch1 - 0x10}}));
    EXPECT_TRUE(committed_xid_visible(2, s));
    EXPECT_FALSE(committed_xid_visible(3, s));
    EXPECT_FALSE(committed_xid_visible(5, s));
}
