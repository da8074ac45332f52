#include "wal/pgoutput_records.hpp"
#include "wal/protocol_error.hpp"
#include "wal_frame_builder.hpp"

#include <gtest/gtest.h>

using namespace once::relay::wal;

TEST(WalPgoutputRecords, ParsesBegin) {
    auto r = parse_pgoutput(wal_test::begin(0x1234, 99, 4242));
    ASSERT_TRUE(std::holds_alternative<PgoutputBegin>(r));
    EXPECT_EQ(std::get<PgoutputBegin>(r).final_lsn, 0x1234u);
    EXPECT_EQ(std::get<PgoutputBegin>(r).commit_time, 99);
    EXPECT_EQ(std::get<PgoutputBegin>(r).xid, 4242u);
}

TEST(WalPgoutputRecords, ParsesCommit) {
    auto r = parse_pgoutput(wal_test::commit(0x1234, 0x1260, 99));
    ASSERT_TRUE(std::holds_alternative<PgoutputCommit>(r));
    EXPECT_EQ(std::get<PgoutputCommit>(r).commit_lsn, 0x1234u);
    EXPECT_EQ(std::get<PgoutputCommit>(r).end_lsn, 0x1260u);
    EXPECT_EQ(std::get<PgoutputCommit>(r).commit_time, 99);
}

TEST(WalPgoutputRecords, ParsesMessageWithBinaryContent) {
    std::string content("a\0b\xff", 4);
    std::string frame = wal_test::message(true, 0x99, "pg_once", content);  // the views point into it
    auto r = parse_pgoutput(frame);
    ASSERT_TRUE(std::holds_alternative<PgoutputMessage>(r));
    const auto& m = std::get<PgoutputMessage>(r);
    EXPECT_TRUE(m.transactional);
    EXPECT_EQ(m.lsn, 0x99u);
    EXPECT_EQ(m.prefix, "pg_once");
    EXPECT_EQ(m.content, content);
    EXPECT_FALSE(std::get<PgoutputMessage>(parse_pgoutput(wal_test::message(false, 1, "p", ""))).transactional);
}

TEST(WalPgoutputRecords, SkipsOtherMessagesByType) {
    for (char type : {'R', 'Y', 'O', 'I', 'U', 'D', 'T', 'S', 'E'}) {
        auto r = parse_pgoutput(std::string(1, type) + "whatever follows");
        ASSERT_TRUE(std::holds_alternative<PgoutputOther>(r)) << type;
        EXPECT_EQ(std::get<PgoutputOther>(r).type, type);
    }
}

TEST(WalPgoutputRecords, EveryTruncationIsRejected) {
    for (const std::string& whole : {wal_test::begin(1, 2, 3), wal_test::commit(1, 2, 3),
                                     wal_test::message(true, 7, "pg_once", "content")}) {
        for (size_t len = 0; len < whole.size(); ++len)
            EXPECT_THROW(parse_pgoutput(whole.substr(0, len)), ProtocolError) << whole[0] << " of " << len;
    }
}

TEST(WalPgoutputRecords, MessageWithoutPrefixTerminatorOrWithTrailingBytesIsRejected) {
    std::string no_nul = "M";
    wal_test::u8(no_nul, 1);
    wal_test::u64(no_nul, 5);
    no_nul += "pg_once";  // no NUL before the frame ends
    EXPECT_THROW(parse_pgoutput(no_nul), ProtocolError);
    EXPECT_THROW(parse_pgoutput(wal_test::message(true, 5, "pg_once", "abc") + "x"), ProtocolError);
}
