#include "core/wal_message.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using once::DecodedWalMessage;
using once::WalMessage;
using once::WalMessageFormatError;
using once::WalMessageTag;
using once::append_wal_message_tag;
using once::decode_wal_message;
using once::wal_message_tag;
using once::wal_message_tagged_bytes;
using once::wal_message_tags_equal;

namespace {

WalMessage full_message() {
    WalMessage m;
    for (size_t i = 0; i < m.id.size(); ++i) m.id[i] = static_cast<uint8_t>(0xA0 + i);
    m.created_at_us = 1'764'150'000'123'456;
    m.topic = "order.placed";
    m.key = "order-42";
    m.key_owner = 16385;
    for (size_t i = 0; i < m.key_seq.size(); ++i) m.key_seq[i] = static_cast<uint8_t>(0x50 + i);
    m.headers = R"({"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})";
    m.payload = R"({"id":42,"total":"9.90"})";
    return m;
}

std::string bytes(std::initializer_list<int> values) {
    std::string out;
    for (int v : values) out.push_back(static_cast<char>(v));
    return out;
}

std::string from_hex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

WalMessageTag some_tag() {
    WalMessageTag tag;
    for (size_t i = 0; i < tag.size(); ++i) tag[i] = static_cast<uint8_t>(0xC0 + i);
    return tag;
}

// The content of the logical message: encoded, then a tag (here not an HMAC: decoding does not
// check it).
std::string content_of(const WalMessage& m) {
    std::string content = once::encode_wal_message(m);
    append_wal_message_tag(content, some_tag());
    return content;
}

}  // namespace

TEST(WalMessage, RoundTripsEveryField) {
    WalMessage m = full_message();
    EXPECT_EQ(decode_wal_message(content_of(m)), m);
}

TEST(WalMessage, NoKeyAndNoHeadersAreNotTheEmptyString) {
    WalMessage none = full_message();
    none.key.reset();
    none.headers.reset();
    WalMessage empty = full_message();
    empty.key = "";
    empty.headers = "";
    WalMessage none_back = decode_wal_message(content_of(none));
    WalMessage empty_back = decode_wal_message(content_of(empty));
    EXPECT_FALSE(none_back.key.has_value());
    EXPECT_FALSE(none_back.headers.has_value());
    ASSERT_TRUE(empty_back.key.has_value());
    EXPECT_EQ(*empty_back.key, "");
    ASSERT_TRUE(empty_back.headers.has_value());
    EXPECT_EQ(*empty_back.headers, "");
}

TEST(WalMessage, NegativeCreatedAtRoundTrips) {  // before 1970: int64, not uint64
    WalMessage m = full_message();
    m.created_at_us = -1;
    EXPECT_EQ(decode_wal_message(content_of(m)).created_at_us, -1);
}

// The exact bytes: the layout is a contract between extension and relay versions.
TEST(WalMessage, EncodesTheDocumentedLayout) {
    WalMessage m;
    m.id.fill(0x11);
    m.created_at_us = 0x0102030405060708;
    m.topic = "t";
    m.payload = "{}";
    std::string expected = bytes({1});
    expected += std::string(16, '\x11');
    expected += bytes({1, 2, 3, 4, 5, 6, 7, 8});
    expected += bytes({0, 1}) + "t";
    expected += bytes({0xFF, 0xFF});              // no key
    expected += bytes({0xFF, 0xFF, 0xFF, 0xFF});  // no headers
    expected += bytes({0, 0, 0, 2}) + "{}";
    EXPECT_EQ(once::encode_wal_message(m), expected);
    std::string content = expected;
    append_wal_message_tag(content, some_tag());
    EXPECT_EQ(content, expected + bytes({0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB,
                                         0xCC, 0xCD, 0xCE, 0xCF}))
        << "the tag follows the payload";

    m.key = "k";
    m.key_owner = 0x0A0B0C0D;
    m.key_seq.fill(0x22);
    m.headers = "{}";
    std::string with_key = once::encode_wal_message(m);
    EXPECT_EQ(with_key.substr(0, 1), bytes({2})) << "a keyed message is format version 2";
    EXPECT_EQ(with_key.substr(28, 3), bytes({0, 1}) + "k");
    EXPECT_EQ(with_key.substr(31, 4), bytes({0x0A, 0x0B, 0x0C, 0x0D})) << "key_owner follows the key";
    EXPECT_EQ(with_key.substr(35, 16), std::string(16, '\x22')) << "then key_seq";
    EXPECT_EQ(with_key.substr(51, 6), bytes({0, 0, 0, 2}) + "{}");
}

// A keyed message of version 1 (no writer makes one, but the format allows it) has neither
// owner nor key_seq.
TEST(WalMessage, Version1KeyedMessageDecodesWithoutOwnerAndSeq) {
    std::string v1 = bytes({1}) + std::string(16, '\x11') + bytes({0, 0, 0, 0, 0, 0, 0, 1});
    v1 += bytes({0, 1}) + "t" + bytes({0, 1}) + "k" + bytes({0xFF, 0xFF, 0xFF, 0xFF}) + bytes({0, 0, 0, 2}) + "{}";
    append_wal_message_tag(v1, some_tag());
    DecodedWalMessage m = decode_wal_message(v1);
    ASSERT_TRUE(m.key.has_value());
    EXPECT_EQ(*m.key, "k");
    EXPECT_EQ(m.key_owner, 0u);
    EXPECT_EQ(m.key_seq, once::Uuid{});
    EXPECT_EQ(m.payload, "{}");
}

TEST(WalMessage, Version2WithoutKeyIsRejected) {
    WalMessage m = full_message();
    m.key.reset();
    std::string content = content_of(m);
    content[0] = 2;
    EXPECT_THROW(decode_wal_message(content), WalMessageFormatError);
}

TEST(WalMessage, EveryTruncationIsRejected) {
    std::string encoded = content_of(full_message());
    for (size_t len = 0; len < encoded.size(); ++len) {
        // A copy of exactly len bytes: a read past it is visible to sanitizers and valgrind.
        std::string truncated = encoded.substr(0, len);
        EXPECT_THROW(decode_wal_message(truncated), WalMessageFormatError) << "length " << len;
    }
    WalMessage bare = full_message();
    bare.key.reset();
    bare.headers.reset();
    std::string bare_encoded = content_of(bare);
    for (size_t len = 0; len < bare_encoded.size(); ++len)
        EXPECT_THROW(decode_wal_message(bare_encoded.substr(0, len)), WalMessageFormatError) << "length " << len;
}

TEST(WalMessage, TruncationErrorNamesTheField) {
    std::string encoded = content_of(full_message());
    try {
        decode_wal_message(encoded.substr(0, 20 + 16));  // 20 bytes and what reads as a tag
        FAIL() << "decoded a truncated message";
    } catch (const WalMessageFormatError& e) {
        EXPECT_NE(std::string(e.what()).find("created_at"), std::string::npos) << e.what();
    }
}

TEST(WalMessage, TrailingBytesAreRejected) {
    std::string encoded = content_of(full_message()) + "x";
    EXPECT_THROW(decode_wal_message(encoded), WalMessageFormatError);
    // Without a tag the last 16 payload bytes would read as one: the lengths catch it.
    EXPECT_THROW(decode_wal_message(once::encode_wal_message(full_message())), WalMessageFormatError);
}

TEST(WalMessage, DecodeSplitsOffTheTag) {
    std::string content = content_of(full_message());
    DecodedWalMessage decoded = decode_wal_message(content);
    EXPECT_EQ(decoded.tag, some_tag());
    EXPECT_EQ(static_cast<const WalMessage&>(decoded), full_message());
    EXPECT_EQ(wal_message_tagged_bytes(content), once::encode_wal_message(full_message()));
    EXPECT_THROW(wal_message_tagged_bytes(std::string(15, '\x01')), WalMessageFormatError);
}

// The origin a tag binds a message to, as the HMAC reads it: big-endian system identifier,
// database oid, xid (16 bytes).
TEST(WalMessage, OriginBytesAreTheDocumentedLayout) {
    once::WalMessageOrigin origin{0x1122334455667788, 16384, 1234};
    EXPECT_EQ(once::wal_message_origin_bytes(origin), from_hex("112233445566778800004000000004d2"));
    EXPECT_EQ(once::wal_message_origin_bytes({}).size(), once::kWalMessageOriginSize);
    EXPECT_EQ(once::wal_message_origin_bytes({~0ull, ~0u, ~0u}), std::string(16, '\xff'));
}

// The pinned vector both sides compute (the extension with PostgreSQL's common/hmac.h, the
// relay with OpenSSL: tests/unit/daemon/wal_message_tag_test.cpp pins the same value):
// HMAC-SHA256 with key 00 01 .. 1f over the origin (system identifier 0x1122334455667788,
// database 16384, xid 1234) and the documented layout's message (EncodesTheDocumentedLayout),
// computed once outside this code with
//   openssl dgst -sha256 -mac HMAC -macopt hexkey:000102..1f origin_and_message.bin
// (python's hmac.new(key, origin + message, 'sha256') gives the same).
// tests/pgtap/outbox_wal_transport.sql checks the same value against its SQL HMAC, and that
// HMAC against the extension's tags.
TEST(WalMessage, PinnedTagVector) {
    WalMessage m;
    m.id.fill(0x11);
    m.created_at_us = 0x0102030405060708;
    m.topic = "t";
    m.payload = "{}";
    std::string tagged = once::encode_wal_message(m);
    EXPECT_EQ(tagged, from_hex("011111111111111111111111111111111101020304050607080001"
                               "74ffffffffffff000000027b7d"));
    const std::string mac =
        from_hex("dab07439b1b0f663b6c42b109bcf4731b7841a26eb3e06f04771f94d255cd15c");
    WalMessageTag tag = wal_message_tag(reinterpret_cast<const uint8_t*>(mac.data()), mac.size());
    std::string content = tagged;
    append_wal_message_tag(content, tag);
    EXPECT_EQ(content.substr(tagged.size()), from_hex("dab07439b1b0f663b6c42b109bcf4731"));
    EXPECT_EQ(decode_wal_message(content).tag, tag);
    EXPECT_THROW(wal_message_tag(reinterpret_cast<const uint8_t*>(mac.data()), 15), std::length_error);
}

TEST(WalMessage, TagsCompareEveryByte) {
    WalMessageTag a = some_tag();
    EXPECT_TRUE(wal_message_tags_equal(a, a));
    for (size_t i = 0; i < a.size(); ++i) {
        WalMessageTag b = a;
        b[i] ^= 0x01;
        EXPECT_FALSE(wal_message_tags_equal(a, b)) << "byte " << i;
        EXPECT_FALSE(wal_message_tags_equal(b, a)) << "byte " << i;
    }
}

TEST(WalMessage, LengthsPointingPastTheEndAreRejected) {
    WalMessage m = full_message();
    m.key.reset();
    m.headers.reset();
    std::string encoded = content_of(m);
    // The payload length is the 4 bytes before the payload: claim 0xFFFFFFFE bytes.
    size_t at = encoded.size() - 16 - m.payload.size() - 4;  // (before the tag)
    encoded.replace(at, 4, bytes({0xFF, 0xFF, 0xFF, 0xFE}));
    EXPECT_THROW(decode_wal_message(encoded), WalMessageFormatError);
    // The topic length claims more than the whole message.
    std::string topic_long = content_of(m);
    topic_long.replace(25, 2, bytes({0xFF, 0xFE}));
    EXPECT_THROW(decode_wal_message(topic_long), WalMessageFormatError);
}

TEST(WalMessage, OtherVersionsAreRejected) {
    std::string encoded = content_of(full_message());
    for (int version : {0, 4, 255}) {
        encoded[0] = static_cast<char>(version);
        try {
            decode_wal_message(encoded);
            FAIL() << "decoded version " << version;
        } catch (const WalMessageFormatError& e) {
            EXPECT_NE(std::string(e.what()).find("version"), std::string::npos) << e.what();
        }
    }
}

TEST(WalMessage, EncodeRefusesFieldsThatDoNotFitTheirLength) {
    WalMessage m = full_message();
    m.key = std::string(0xFFFE, 'k');  // the longest key
    EXPECT_EQ(decode_wal_message(content_of(m)).key->size(), 0xFFFEu);
    m.key = std::string(0xFFFF, 'k');  // would read as "no key"
    EXPECT_THROW(once::encode_wal_message(m), std::length_error);
    m = full_message();
    m.topic = std::string(0x10000, 't');
    EXPECT_THROW(once::encode_wal_message(m), std::length_error);
}

// Version 3: the optional fields after the payload.

TEST(WalMessage, WithoutOptionalFieldsTheBytesAreVersions1And2) {
    WalMessage keyed = full_message();
    EXPECT_EQ(once::encode_wal_message(keyed)[0], 2);
    WalMessage unkeyed = full_message();
    unkeyed.key.reset();
    EXPECT_EQ(once::encode_wal_message(unkeyed)[0], 1);
}

TEST(WalMessage, ContentTypeRoundTripsInVersion3KeyedOrNot) {
    WalMessage m = full_message();
    m.content_type = "application/xml";
    std::string encoded = once::encode_wal_message(m);
    EXPECT_EQ(encoded[0], 3);
    // after the payload: one field, id 1, length 15, the bytes
    EXPECT_EQ(encoded.substr(encoded.size() - 21), bytes({1, 1, 0, 0, 0, 15}) + "application/xml");
    EXPECT_EQ(decode_wal_message(content_of(m)), m);
    m.key.reset();
    m.headers.reset();
    WalMessage back = decode_wal_message(content_of(m));
    EXPECT_EQ(back, m);
    ASSERT_TRUE(back.content_type.has_value());
    EXPECT_EQ(*back.content_type, "application/xml");
    EXPECT_FALSE(back.key.has_value());
}

TEST(WalMessage, Version3WithoutOptionalFieldsDecodes) {
    WalMessage m = full_message();
    std::string encoded = once::encode_wal_message(m);
    encoded[0] = 3;
    encoded.push_back(0);   // no optional fields
    append_wal_message_tag(encoded, some_tag());
    WalMessage back = decode_wal_message(encoded);
    EXPECT_EQ(back, m);
    EXPECT_FALSE(back.content_type.has_value());
}

TEST(WalMessage, UnknownOptionalFieldsAreSkipped) {
    WalMessage m = full_message();
    m.content_type = "text/plain";
    std::string payload_end = once::encode_wal_message(full_message()).substr(1);
    // a newer extension's fields before and after the one this reader knows, one empty
    std::string encoded = bytes({3}) + payload_end + bytes({3}) + bytes({200, 0, 0, 0, 3}) + "abc" +
                          bytes({1, 0, 0, 0, 10}) + "text/plain" + bytes({7, 0, 0, 0, 0});
    append_wal_message_tag(encoded, some_tag());
    EXPECT_EQ(decode_wal_message(encoded), m);
    WalMessage plain = full_message();
    std::string only_unknown = once::encode_wal_message(plain);
    only_unknown[0] = 3;
    only_unknown += bytes({1, 42, 0, 0, 0, 2}) + "xy";
    append_wal_message_tag(only_unknown, some_tag());
    WalMessage back = decode_wal_message(only_unknown);
    EXPECT_EQ(back, plain);
    EXPECT_FALSE(back.content_type.has_value());
}

TEST(WalMessage, OptionalFieldTwiceIsRejected) {
    WalMessage m = full_message();
    m.content_type = "text/plain";
    std::string encoded = once::encode_wal_message(m) + bytes({1, 0, 0, 0, 1}) + "x";
    encoded[encoded.size() - 1 - 5 - 10 - 5 - 1] = 2;   // the count: two fields
    append_wal_message_tag(encoded, some_tag());
    EXPECT_THROW(decode_wal_message(encoded), WalMessageFormatError);
}

TEST(WalMessage, Version3TruncationsAndLengthsPastTheEndAreRejected) {
    WalMessage m = full_message();
    m.content_type = "application/xml";
    std::string encoded = content_of(m);
    for (size_t len = 0; len < encoded.size(); ++len)
        EXPECT_THROW(decode_wal_message(encoded.substr(0, len)), WalMessageFormatError) << "length " << len;
    std::string body = once::encode_wal_message(m);
    body[body.size() - 15 - 1] = 16;   // the field's length one past its bytes
    append_wal_message_tag(body, some_tag());
    EXPECT_THROW(decode_wal_message(body), WalMessageFormatError);
    std::string half = once::encode_wal_message(full_message());
    half[0] = 3;
    half += bytes({1, 1, 0, 0});   // one field: an id and half a length
    append_wal_message_tag(half, some_tag());
    EXPECT_THROW(decode_wal_message(half), WalMessageFormatError);
}
