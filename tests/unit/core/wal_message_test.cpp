#include "core/wal_message.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using once::WalMessage;
using once::WalMessageFormatError;
using once::decode_wal_message;
using once::encode_wal_message;

namespace {

WalMessage full_message() {
    WalMessage m;
    for (size_t i = 0; i < m.id.size(); ++i) m.id[i] = static_cast<uint8_t>(0xA0 + i);
    m.created_at_us = 1'764'150'000'123'456;
    m.topic = "order.placed";
    m.key = "order-42";
    m.headers = R"({"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})";
    m.payload = R"({"id":42,"total":"9.90"})";
    return m;
}

std::string bytes(std::initializer_list<int> values) {
    std::string out;
    for (int v : values) out.push_back(static_cast<char>(v));
    return out;
}

}  // namespace

TEST(WalMessage, RoundTripsEveryField) {
    WalMessage m = full_message();
    EXPECT_EQ(decode_wal_message(encode_wal_message(m)), m);
}

TEST(WalMessage, NoKeyAndNoHeadersAreNotTheEmptyString) {
    WalMessage none = full_message();
    none.key.reset();
    none.headers.reset();
    WalMessage empty = full_message();
    empty.key = "";
    empty.headers = "";
    WalMessage none_back = decode_wal_message(encode_wal_message(none));
    WalMessage empty_back = decode_wal_message(encode_wal_message(empty));
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
    EXPECT_EQ(decode_wal_message(encode_wal_message(m)).created_at_us, -1);
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
    EXPECT_EQ(encode_wal_message(m), expected);

    m.key = "k";
    m.headers = "{}";
    std::string with_key = encode_wal_message(m);
    EXPECT_EQ(with_key.substr(28, 3), bytes({0, 1}) + "k");
    EXPECT_EQ(with_key.substr(31, 6), bytes({0, 0, 0, 2}) + "{}");
}

TEST(WalMessage, EveryTruncationIsRejected) {
    std::string encoded = encode_wal_message(full_message());
    for (size_t len = 0; len < encoded.size(); ++len) {
        // A copy of exactly len bytes: a read past it is visible to sanitizers and valgrind.
        std::string truncated = encoded.substr(0, len);
        EXPECT_THROW(decode_wal_message(truncated), WalMessageFormatError) << "length " << len;
    }
    WalMessage bare = full_message();
    bare.key.reset();
    bare.headers.reset();
    std::string bare_encoded = encode_wal_message(bare);
    for (size_t len = 0; len < bare_encoded.size(); ++len)
        EXPECT_THROW(decode_wal_message(bare_encoded.substr(0, len)), WalMessageFormatError) << "length " << len;
}

TEST(WalMessage, TruncationErrorNamesTheField) {
    std::string encoded = encode_wal_message(full_message());
    try {
        decode_wal_message(encoded.substr(0, 20));
        FAIL() << "decoded a truncated message";
    } catch (const WalMessageFormatError& e) {
        EXPECT_NE(std::string(e.what()).find("created_at"), std::string::npos) << e.what();
    }
}

TEST(WalMessage, TrailingBytesAreRejected) {
    std::string encoded = encode_wal_message(full_message()) + "x";
    EXPECT_THROW(decode_wal_message(encoded), WalMessageFormatError);
}

TEST(WalMessage, LengthsPointingPastTheEndAreRejected) {
    WalMessage m = full_message();
    m.key.reset();
    m.headers.reset();
    std::string encoded = encode_wal_message(m);
    // The payload length is the 4 bytes before the payload: claim 0xFFFFFFFE bytes.
    size_t at = encoded.size() - m.payload.size() - 4;
    encoded.replace(at, 4, bytes({0xFF, 0xFF, 0xFF, 0xFE}));
    EXPECT_THROW(decode_wal_message(encoded), WalMessageFormatError);
    // The topic length claims more than the whole message.
    std::string topic_long = encode_wal_message(m);
    topic_long.replace(25, 2, bytes({0xFF, 0xFE}));
    EXPECT_THROW(decode_wal_message(topic_long), WalMessageFormatError);
}

TEST(WalMessage, OtherVersionsAreRejected) {
    std::string encoded = encode_wal_message(full_message());
    for (int version : {0, 2, 255}) {
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
    EXPECT_EQ(decode_wal_message(encode_wal_message(m)).key->size(), 0xFFFEu);
    m.key = std::string(0xFFFF, 'k');  // would read as "no key"
    EXPECT_THROW(encode_wal_message(m), std::length_error);
    m = full_message();
    m.topic = std::string(0x10000, 't');
    EXPECT_THROW(encode_wal_message(m), std::length_error);
}
