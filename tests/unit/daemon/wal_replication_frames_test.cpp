#include "wal/protocol_error.hpp"
#include "wal/replication_frames.hpp"
#include "wal_frame_builder.hpp"

#include <gtest/gtest.h>

using namespace once::relay::wal;

TEST(WalReplicationFrames, ParsesXLogDataAndKeepsItsPayload) {
    std::string frame = wal_test::xlog_data(0x100, 0x200, 777, "Bpayload");
    auto parsed = parse_replication_frame(frame);
    ASSERT_TRUE(std::holds_alternative<XLogData>(parsed));
    const auto& x = std::get<XLogData>(parsed);
    EXPECT_EQ(x.wal_start, 0x100u);
    EXPECT_EQ(x.wal_end, 0x200u);
    EXPECT_EQ(x.send_time, 777);
    EXPECT_EQ(x.data, "Bpayload");
}

TEST(WalReplicationFrames, ParsesKeepalive) {
    for (bool reply : {false, true}) {
        auto parsed = parse_replication_frame(wal_test::keepalive(0xABCDEF0123ULL, -5, reply));
        ASSERT_TRUE(std::holds_alternative<PrimaryKeepalive>(parsed));
        const auto& k = std::get<PrimaryKeepalive>(parsed);
        EXPECT_EQ(k.wal_end, 0xABCDEF0123ULL);
        EXPECT_EQ(k.send_time, -5);
        EXPECT_EQ(k.reply_requested, reply);
    }
}

TEST(WalReplicationFrames, EveryTruncatedHeaderIsRejected) {
    std::string x = wal_test::xlog_data(1, 2, 3, "");  // 25 bytes of header, empty payload
    for (size_t len = 0; len < x.size(); ++len)
        EXPECT_THROW(parse_replication_frame(x.substr(0, len)), ProtocolError) << "XLogData of " << len;
    std::string k = wal_test::keepalive(1, 2, true);
    for (size_t len = 0; len < k.size(); ++len)
        EXPECT_THROW(parse_replication_frame(k.substr(0, len)), ProtocolError) << "keepalive of " << len;
}

TEST(WalReplicationFrames, UnknownFrameTypeIsRejected) {
    EXPECT_THROW(parse_replication_frame("x123"), ProtocolError);
}

TEST(WalReplicationFrames, StandbyStatusHasTheDocumentedLayout) {
    StandbyStatus s;
    s.written = 0x0102030405060708;
    s.flushed = 0x1112131415161718;
    s.applied = 0x2122232425262728;
    s.client_time = 0x3132333435363738;
    s.reply_requested = true;
    std::string expected = "r";
    wal_test::u64(expected, s.written);
    wal_test::u64(expected, s.flushed);
    wal_test::u64(expected, s.applied);
    wal_test::u64(expected, static_cast<uint64_t>(s.client_time));
    wal_test::u8(expected, 1);
    EXPECT_EQ(encode_standby_status(s), expected);
    EXPECT_EQ(expected.size(), 34u);
}
