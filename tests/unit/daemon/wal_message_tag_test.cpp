// The WAL transport's message tag (wal/message_tag.hpp) and the decoder that requires it.
#include "core/wal_message.hpp"
#include "wal/message_tag.hpp"
#include "wal/outbox_stream_decoder.hpp"
#include "wal_frame_builder.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <gtest/gtest.h>

using namespace once::relay::wal;

namespace {

const std::string kKey(32, '\x42');

std::string encoded(uint8_t id) {
    once::WalMessage m;
    m.id.fill(id);
    m.created_at_us = 1;
    m.topic = "t";
    m.payload = "{}";
    return once::encode_wal_message(m);
}

}  // namespace

TEST(WalMessageTag, IsTheFirst16BytesOfHmacSha256OverTheBody) {
    std::string body = encoded(1);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), kKey.data(), 32, reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &len);
    WalMessageTag t(kKey);
    EXPECT_EQ(t.tag(body), std::string(reinterpret_cast<char*>(mac), 16));
    EXPECT_EQ(t.sign(body), body + std::string(reinterpret_cast<char*>(mac), 16));
}

// The context is keyed once and re-initialised for every tag: each tag is still the one-shot
// HMAC of its own body, in any order, and a copy tags as the original does.
TEST(WalMessageTag, EachTagIsTheHmacOfItsOwnBodyWhenTheContextIsReused) {
    auto hmac16 = [](const std::string& body) {
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        HMAC(EVP_sha256(), kKey.data(), 32, reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &len);
        return std::string(reinterpret_cast<char*>(mac), 16);
    };
    WalMessageTag t(kKey);
    std::string a = encoded(1), b = encoded(2), empty;
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(t.tag(a), hmac16(a));
        EXPECT_EQ(t.tag(b), hmac16(b));
        EXPECT_EQ(t.tag(empty), hmac16(empty));
    }
    WalMessageTag copy(t);
    WalMessageTag moved(std::move(t));
    EXPECT_EQ(copy.tag(b), hmac16(b));
    EXPECT_EQ(moved.tag(a), hmac16(a));
    WalMessageTag other(std::string(32, 'o'));
    other = copy;
    EXPECT_EQ(other.tag(a), hmac16(a));
}

TEST(WalMessageTag, VerifyReturnsTheBodyOnlyForItsOwnTag) {
    WalMessageTag t(kKey);
    std::string signed_content = t.sign(encoded(1));
    auto body = t.verify(signed_content);
    ASSERT_TRUE(body);
    EXPECT_EQ(*body, encoded(1));
    for (size_t i = 0; i < signed_content.size(); ++i) {   // any byte changed: refused
        std::string c = signed_content;
        c[i] ^= 1;
        EXPECT_FALSE(t.verify(c)) << "byte " << i;
    }
    EXPECT_FALSE(t.verify(encoded(1)));                       // no tag
    EXPECT_FALSE(t.verify(std::string(15, 'x')));             // shorter than a tag
    EXPECT_FALSE(WalMessageTag(std::string(32, 'o')).verify(signed_content));   // another key
}

TEST(WalMessageTag, RefusesAKeyOfAnotherSize) {
    EXPECT_THROW(WalMessageTag(std::string(31, 'k')), std::invalid_argument);
    EXPECT_THROW(WalMessageTag(""), std::invalid_argument);
}

TEST(WalMessageTag, TheDecoderWithAKeyDecodesTaggedMessagesAndReportsOthersUnauthentic) {
    OutboxStreamDecoder d{WalMessageTag(kKey)};
    std::vector<WalEvent> events;
    d.feed(wal_test::begin(0x500, 10, 1), events);
    d.feed(wal_test::message(true, 0x410, "pg_once", WalMessageTag(kKey).sign(encoded(1))), events);
    d.feed(wal_test::message(true, 0x420, "pg_once", encoded(2)), events);   // pg_logical_emit_message by anyone
    d.feed(wal_test::message(true, 0x430, "pg_once", WalMessageTag(std::string(32, 'o')).sign(encoded(3))), events);
    d.feed(wal_test::commit(0x500, 0x528, 10), events);
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(std::get<OutboxMessageEvent>(events[0]).message.id[0], 1);
    const auto& unsigned_one = std::get<MalformedMessageEvent>(events[1]);
    EXPECT_TRUE(unsigned_one.unauthentic);
    EXPECT_EQ(unsigned_one.message_lsn, 0x420u);
    EXPECT_TRUE(std::get<MalformedMessageEvent>(events[2]).unauthentic);
    EXPECT_EQ(std::get<TransactionEndEvent>(events[3]).outbox_messages, 1u);
}

TEST(WalMessageTag, AnAuthenticMessageOfANewerFormatIsReportedAsSuchAForgedOneAsUnauthentic) {
    OutboxStreamDecoder d{WalMessageTag(kKey)};
    std::string newer = encoded(1);
    newer[0] = 3;   // a later extension's format version, its tag last as in every version
    std::vector<WalEvent> events;
    d.feed(wal_test::begin(0x500, 10, 1), events);
    d.feed(wal_test::message(true, 0x410, "pg_once", WalMessageTag(kKey).sign(newer)), events);
    d.feed(wal_test::message(true, 0x420, "pg_once", newer), events);   // the same bytes, untagged: anyone's
    d.feed(wal_test::commit(0x500, 0x528, 10), events);
    ASSERT_EQ(events.size(), 3u);
    const auto& n = std::get<NewerFormatEvent>(events[0]);
    EXPECT_EQ(n.version, 3);
    EXPECT_EQ(n.commit_lsn, 0x500u);
    EXPECT_EQ(n.message_lsn, 0x410u);
    EXPECT_NE(n.error.find("format version 3"), std::string::npos) << n.error;
    EXPECT_TRUE(std::get<MalformedMessageEvent>(events[1]).unauthentic);
}
