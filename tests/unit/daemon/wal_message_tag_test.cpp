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
// The stream's cluster and database, and the xid of the transactions below (their Begin).
constexpr uint64_t kSystem = 7300000000000000001ull;
constexpr uint32_t kDatabase = 16384;
constexpr uint32_t kXid = 731;
const once::WalMessageOrigin kOrigin{kSystem, kDatabase, kXid};

std::string origin_bytes(const once::WalMessageOrigin& o) { return once::wal_message_origin_bytes(o); }

std::string encoded(uint8_t id) {
    once::WalMessage m;
    m.id.fill(id);
    m.created_at_us = 1;
    m.topic = "t";
    m.payload = "{}";
    return once::encode_wal_message(m);
}

}  // namespace

TEST(WalMessageTag, IsTheFirst16BytesOfHmacSha256OverTheOriginAndTheBody) {
    std::string body = encoded(1);
    std::string input = origin_bytes(kOrigin) + body;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), kKey.data(), 32, reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &len);
    WalMessageTag t(kKey);
    EXPECT_EQ(t.tag(kOrigin, body), std::string(reinterpret_cast<char*>(mac), 16));
    EXPECT_EQ(t.sign(kOrigin, body), body + std::string(reinterpret_cast<char*>(mac), 16));
}

// The vector tests/unit/core/wal_message_test.cpp (PinnedTagVector) pins for the extension.
TEST(WalMessageTag, PinnedVectorSharedWithTheExtension) {
    std::string key;
    for (int i = 0; i < 32; ++i) key.push_back(static_cast<char>(i));
    once::WalMessage m;
    m.id.fill(0x11);
    m.created_at_us = 0x0102030405060708;
    m.topic = "t";
    m.payload = "{}";
    const std::string tag = WalMessageTag(key).tag({0x1122334455667788, 16384, 1234}, once::encode_wal_message(m));
    const unsigned char expected[16] = {0xda, 0xb0, 0x74, 0x39, 0xb1, 0xb0, 0xf6, 0x63,
                                        0xb6, 0xc4, 0x2b, 0x10, 0x9b, 0xcf, 0x47, 0x31};
    EXPECT_EQ(tag, std::string(reinterpret_cast<const char*>(expected), 16));
}

// A message's bytes verify only at the origin they were tagged for: another transaction,
// database or cluster emitting them again gets another tag.
TEST(WalMessageTag, ATagVerifiesOnlyAtItsOrigin) {
    WalMessageTag t(kKey);
    std::string content = t.sign(kOrigin, encoded(1));
    EXPECT_TRUE(t.verify(kOrigin, content));
    EXPECT_FALSE(t.verify({kSystem, kDatabase, kXid + 1}, content));
    EXPECT_FALSE(t.verify({kSystem, kDatabase + 1, kXid}, content));
    EXPECT_FALSE(t.verify({kSystem + 1, kDatabase, kXid}, content));
    EXPECT_FALSE(t.verify({kSystem, kDatabase, kXid ^ 0x80000000u}, content));
}

// The context is keyed once and re-initialised for every tag: each tag is still the one-shot
// HMAC of its own body, in any order, and a copy tags as the original does.
TEST(WalMessageTag, EachTagIsTheHmacOfItsOwnBodyWhenTheContextIsReused) {
    auto hmac16 = [](const std::string& body) {
        std::string input = origin_bytes(kOrigin) + body;
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        HMAC(EVP_sha256(), kKey.data(), 32, reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &len);
        return std::string(reinterpret_cast<char*>(mac), 16);
    };
    WalMessageTag t(kKey);
    std::string a = encoded(1), b = encoded(2), empty;
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(t.tag(kOrigin, a), hmac16(a));
        EXPECT_EQ(t.tag(kOrigin, b), hmac16(b));
        EXPECT_EQ(t.tag(kOrigin, empty), hmac16(empty));
    }
    WalMessageTag copy(t);
    WalMessageTag moved(std::move(t));
    EXPECT_EQ(copy.tag(kOrigin, b), hmac16(b));
    EXPECT_EQ(moved.tag(kOrigin, a), hmac16(a));
    WalMessageTag other(std::string(32, 'o'));
    other = copy;
    EXPECT_EQ(other.tag(kOrigin, a), hmac16(a));
}

TEST(WalMessageTag, VerifyReturnsTheBodyOnlyForItsOwnTag) {
    WalMessageTag t(kKey);
    std::string signed_content = t.sign(kOrigin, encoded(1));
    auto body = t.verify(kOrigin, signed_content);
    ASSERT_TRUE(body);
    EXPECT_EQ(*body, encoded(1));
    for (size_t i = 0; i < signed_content.size(); ++i) {   // any byte changed: refused
        std::string c = signed_content;
        c[i] ^= 1;
        EXPECT_FALSE(t.verify(kOrigin, c)) << "byte " << i;
    }
    EXPECT_FALSE(t.verify(kOrigin, encoded(1)));                       // no tag
    EXPECT_FALSE(t.verify(kOrigin, std::string(15, 'x')));             // shorter than a tag
    EXPECT_FALSE(WalMessageTag(std::string(32, 'o')).verify(kOrigin, signed_content));   // another key
}

TEST(WalMessageTag, RefusesAKeyOfAnotherSize) {
    EXPECT_THROW(WalMessageTag(std::string(31, 'k')), std::invalid_argument);
    EXPECT_THROW(WalMessageTag(""), std::invalid_argument);
}

TEST(WalMessageTag, TheDecoderWithAKeyDecodesTaggedMessagesAndReportsOthersUnauthentic) {
    OutboxStreamDecoder d{WalMessageTag(kKey), kSystem, kDatabase};
    std::vector<WalEvent> events;
    d.feed(wal_test::begin(0x500, 10, kXid), events);
    d.feed(wal_test::message(true, 0x410, "pg_once", WalMessageTag(kKey).sign(kOrigin, encoded(1))), events);
    d.feed(wal_test::message(true, 0x420, "pg_once", encoded(2)), events);   // pg_logical_emit_message by anyone
    d.feed(wal_test::message(true, 0x430, "pg_once", WalMessageTag(std::string(32, 'o')).sign(kOrigin, encoded(3))), events);
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
    OutboxStreamDecoder d{WalMessageTag(kKey), kSystem, kDatabase};
    std::string newer = encoded(1);
    newer[0] = 4;   // a later extension's format version, its tag last as in every version
    std::vector<WalEvent> events;
    d.feed(wal_test::begin(0x500, 10, kXid), events);
    d.feed(wal_test::message(true, 0x410, "pg_once", WalMessageTag(kKey).sign(kOrigin, newer)), events);
    d.feed(wal_test::message(true, 0x420, "pg_once", newer), events);   // the same bytes, untagged: anyone's
    d.feed(wal_test::commit(0x500, 0x528, 10), events);
    ASSERT_EQ(events.size(), 3u);
    const auto& n = std::get<NewerFormatEvent>(events[0]);
    EXPECT_EQ(n.version, 4);
    EXPECT_EQ(n.commit_lsn, 0x500u);
    EXPECT_EQ(n.message_lsn, 0x410u);
    EXPECT_NE(n.error.find("format version 4"), std::string::npos) << n.error;
    EXPECT_TRUE(std::get<MalformedMessageEvent>(events[1]).unauthentic);
}

// A genuine message's bytes emitted again by another transaction (pg_logical_emit_message by
// anyone who read them from a slot, an archive or a backup): its tag was computed for the
// first transaction's xid, so the second one's is unauthentic, never decoded.
TEST(WalMessageTag, TheDecoderReportsAReplayInAnotherTransactionUnauthentic) {
    OutboxStreamDecoder d{WalMessageTag(kKey), kSystem, kDatabase};
    const std::string genuine = WalMessageTag(kKey).sign(kOrigin, encoded(1));
    std::vector<WalEvent> events;
    d.feed(wal_test::begin(0x500, 10, kXid), events);
    d.feed(wal_test::message(true, 0x410, "pg_once", genuine), events);
    d.feed(wal_test::commit(0x500, 0x528, 10), events);
    d.feed(wal_test::begin(0x700, 20, kXid + 5), events);
    d.feed(wal_test::message(true, 0x610, "pg_once", genuine), events);
    d.feed(wal_test::commit(0x700, 0x728, 20), events);
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(std::get<OutboxMessageEvent>(events[0]).message.id[0], 1);
    const auto& replay = std::get<MalformedMessageEvent>(events[2]);
    EXPECT_TRUE(replay.unauthentic);
    EXPECT_EQ(replay.message_lsn, 0x610u);
    EXPECT_EQ(std::get<TransactionEndEvent>(events[3]).outbox_messages, 0u);
    // A decoder of another database (the same key: a database copied with its extension) or
    // of another cluster does not take it either.
    for (auto [system, database] : {std::pair{kSystem, kDatabase + 1}, std::pair{kSystem + 1, kDatabase}}) {
        OutboxStreamDecoder other{WalMessageTag(kKey), system, database};
        std::vector<WalEvent> seen;
        other.feed(wal_test::begin(0x500, 10, kXid), seen);
        other.feed(wal_test::message(true, 0x410, "pg_once", genuine), seen);
        ASSERT_FALSE(seen.empty());
        EXPECT_TRUE(std::get<MalformedMessageEvent>(seen[0]).unauthentic);
    }
}

// Content longer than once.send writes is skipped by its length: reported unauthentic whatever
// it holds, even a valid tag (its tag is not computed).
TEST(WalMessageTag, TheDecoderSkipsContentLongerThanOnceSendWritesByItsLength) {
    OutboxStreamDecoder d{WalMessageTag(kKey), kSystem, kDatabase};
    once::WalMessage m;
    m.id.fill(9);
    m.topic = "t";
    m.payload = "\"" + std::string(once::kWalMessageMaxContentBytes, 'x') + "\"";
    const std::string too_long = WalMessageTag(kKey).sign(kOrigin, once::encode_wal_message(m));
    m.payload = "\"" + std::string(once::kWalMessageMaxContentBytes - 100, 'x') + "\"";
    const std::string longest = WalMessageTag(kKey).sign(kOrigin, once::encode_wal_message(m));
    ASSERT_LE(longest.size(), once::kWalMessageMaxContentBytes);
    std::vector<WalEvent> events;
    d.feed(wal_test::begin(0x500, 10, kXid), events);
    d.feed(wal_test::message(true, 0x410, "pg_once", too_long), events);
    d.feed(wal_test::message(true, 0x420, "pg_once", longest), events);
    d.feed(wal_test::commit(0x500, 0x528, 10), events);
    ASSERT_EQ(events.size(), 3u);
    const auto& skipped = std::get<MalformedMessageEvent>(events[0]);
    EXPECT_TRUE(skipped.unauthentic);
    EXPECT_NE(skipped.error.find("longer than once.send writes"), std::string::npos) << skipped.error;
    EXPECT_EQ(std::get<OutboxMessageEvent>(events[1]).message.payload.size(), once::kWalMessageMaxContentBytes - 98);
}
