#include "core/wal_message.hpp"
#include "wal/outbox_stream_decoder.hpp"
#include "wal/protocol_error.hpp"
#include "wal_frame_builder.hpp"

#include <gtest/gtest.h>

using namespace once::relay::wal;

namespace {

std::string outbox_content(uint8_t id_byte, const std::string& topic) {
    once::WalMessage m;
    m.id.fill(id_byte);
    m.created_at_us = 1;
    m.topic = topic;
    m.payload = "{}";
    std::string content = once::encode_wal_message(m);
    once::append_wal_message_tag(content, once::WalMessageTag{});  // (the decoder does not verify tags)
    return content;
}

std::vector<WalEvent> feed_all(OutboxStreamDecoder& d, const std::vector<std::string>& messages) {
    std::vector<WalEvent> events;
    for (const auto& m : messages) d.feed(m, events);
    return events;
}

}  // namespace

TEST(WalOutboxStreamDecoder, YieldsOutboxMessagesWithTheirCommitThenTheTransactionEnd) {
    OutboxStreamDecoder d;
    auto events = feed_all(d, {wal_test::begin(0x500, 10, 1),
                               wal_test::message(true, 0x410, "pg_once", outbox_content(1, "a")),
                               wal_test::message(true, 0x420, "other_prefix", "ignored"),
                               std::string("Rrelation"),
                               wal_test::message(true, 0x430, "pg_once", outbox_content(2, "b")),
                               wal_test::commit(0x500, 0x528, 10)});
    ASSERT_EQ(events.size(), 3u);
    const auto& first = std::get<OutboxMessageEvent>(events[0]);
    EXPECT_EQ(first.commit_lsn, 0x500u);
    EXPECT_EQ(first.message_lsn, 0x410u);
    EXPECT_EQ(first.message.topic, "a");
    EXPECT_EQ(first.message.id[0], 1);
    EXPECT_EQ(first.commit_time, 10) << "the commit time of the Begin (once_wal_slot_lag_seconds)";
    EXPECT_EQ(std::get<OutboxMessageEvent>(events[1]).message.topic, "b");
    const auto& end = std::get<TransactionEndEvent>(events[2]);
    EXPECT_EQ(end.commit_lsn, 0x500u);
    EXPECT_EQ(end.end_lsn, 0x528u);
    EXPECT_EQ(end.outbox_messages, 2u);
    EXPECT_FALSE(d.in_transaction());
}

TEST(WalOutboxStreamDecoder, ReportsEveryTransactionEndEvenWithoutOutboxMessages) {
    OutboxStreamDecoder d;
    auto events = feed_all(d, {wal_test::begin(0x600, 1, 2), wal_test::commit(0x600, 0x640, 1)});
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(std::get<TransactionEndEvent>(events[0]).outbox_messages, 0u);
}

TEST(WalOutboxStreamDecoder, MalformedPgOnceContentIsReportedAndTheStreamGoesOn) {
    OutboxStreamDecoder d;
    std::string truncated = outbox_content(3, "t");
    truncated.pop_back();
    auto events = feed_all(d, {wal_test::begin(0x700, 1, 3), wal_test::message(true, 0x6F0, "pg_once", truncated),
                               wal_test::message(true, 0x6F8, "pg_once", outbox_content(4, "ok")),
                               wal_test::commit(0x700, 0x728, 1)});
    ASSERT_EQ(events.size(), 3u);
    const auto& bad = std::get<MalformedMessageEvent>(events[0]);
    EXPECT_EQ(bad.commit_lsn, 0x700u);
    EXPECT_NE(bad.error.find("truncated"), std::string::npos) << bad.error;
    EXPECT_EQ(std::get<OutboxMessageEvent>(events[1]).message.topic, "ok");
    EXPECT_EQ(std::get<TransactionEndEvent>(events[2]).outbox_messages, 1u);
}

TEST(WalOutboxStreamDecoder, NonTransactionalPgOnceMessageIsMalformed) {
    OutboxStreamDecoder d;
    auto events = feed_all(d, {wal_test::message(false, 0x800, "pg_once", outbox_content(5, "t"))});
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(std::get<MalformedMessageEvent>(events[0]).commit_lsn, 0u);
    EXPECT_EQ(std::get<MalformedMessageEvent>(events[0]).message_lsn, 0x800u);
}

TEST(WalOutboxStreamDecoder, MessagesOutOfPlaceAreProtocolErrors) {
    {
        OutboxStreamDecoder d;
        std::vector<WalEvent> events;
        EXPECT_THROW(d.feed(wal_test::commit(1, 2, 3), events), ProtocolError);
    }
    {
        OutboxStreamDecoder d;
        std::vector<WalEvent> events;
        d.feed(wal_test::begin(1, 2, 3), events);
        EXPECT_THROW(d.feed(wal_test::begin(4, 5, 6), events), ProtocolError);
    }
    {
        OutboxStreamDecoder d;
        std::vector<WalEvent> events;
        EXPECT_THROW(d.feed(wal_test::message(true, 1, "pg_once", outbox_content(6, "t")), events), ProtocolError);
    }
    {
        OutboxStreamDecoder d;
        std::vector<WalEvent> events;
        d.feed(wal_test::begin(0x10, 2, 3), events);
        EXPECT_THROW(d.feed(wal_test::commit(0x11, 0x20, 3), events), ProtocolError);
    }
    {
        OutboxStreamDecoder d;
        std::vector<WalEvent> events;
        EXPECT_THROW(d.feed("", events), ProtocolError);
    }
}
