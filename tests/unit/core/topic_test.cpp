#include "core/error.hpp"
#include "core/topic.hpp"

#include <gtest/gtest.h>

using once::topic_matches;

TEST(Topic, ValidTopics) {
    for (const char* t : {"order", "order.created", "cafe_orders.stock-reserve.v2", "a.b.c.d"})
        EXPECT_NO_THROW(once::validate_topic(t)) << t;
}

TEST(Topic, InvalidTopics) {
    for (const std::string& t : {std::string(), std::string("."), std::string("a..b"), std::string("a."),
                                 std::string(".a"), std::string("a b"), std::string("order.*"),
                                 std::string("order.>"), std::string("caf\xc3\xa9"), std::string(256, 'a')}) {
        try {
            once::validate_topic(t);
            FAIL() << "accepted: " << t;
        } catch (const once::Error& e) {
            EXPECT_EQ(e.code(), once::ErrorCode::invalid_topic);
        }
    }
}

TEST(Topic, PatternValidation) {
    for (const char* p : {"order.*", "order.>", ">", "*", "*.created", "a.*.c.>"})
        EXPECT_NO_THROW(once::validate_topic_pattern(p)) << p;
    for (const char* p : {"", "order.>.x", "or*der", "a..b", "order.>x", "a b"}) {
        try {
            once::validate_topic_pattern(p);
            FAIL() << "accepted: " << p;
        } catch (const once::Error& e) {
            EXPECT_EQ(e.code(), once::ErrorCode::invalid_topic_pattern);
        }
    }
}

TEST(Topic, Matching) {
    EXPECT_TRUE(topic_matches("order.created", "order.created"));
    EXPECT_FALSE(topic_matches("order.created", "order.create"));
    EXPECT_FALSE(topic_matches("order.created", "order.created.v2"));
    EXPECT_TRUE(topic_matches("order.*", "order.created"));
    EXPECT_FALSE(topic_matches("order.*", "order.created.v2"));
    EXPECT_FALSE(topic_matches("order.*", "order"));
    EXPECT_TRUE(topic_matches("order.>", "order.created"));
    EXPECT_TRUE(topic_matches("order.>", "order.created.v2"));
    EXPECT_FALSE(topic_matches("order.>", "order"));
    EXPECT_FALSE(topic_matches("order.>", "orders.created"));
    EXPECT_TRUE(topic_matches(">", "anything.at.all"));
    EXPECT_TRUE(topic_matches(">", "x"));
    EXPECT_TRUE(topic_matches("*", "x"));
    EXPECT_FALSE(topic_matches("*", "x.y"));
    EXPECT_TRUE(topic_matches("*.created", "order.created"));
    EXPECT_FALSE(topic_matches("*.created", "order.updated"));
    EXPECT_TRUE(topic_matches("a.*.c.>", "a.b.c.d.e"));
    EXPECT_FALSE(topic_matches("a.*.c.>", "a.b.c"));
}

// A claim looks literal patterns up directly in the topic index and enumerates the outbox's
// topics only for wildcard patterns: a token that merely contains '*' or '>' is not a wildcard.
TEST(Topic, LiteralPatterns) {
    EXPECT_TRUE(once::is_literal_pattern("order.created"));
    EXPECT_TRUE(once::is_literal_pattern("t"));
    EXPECT_FALSE(once::is_literal_pattern("order.*"));
    EXPECT_FALSE(once::is_literal_pattern("order.>"));
    EXPECT_FALSE(once::is_literal_pattern("*.created"));
    EXPECT_FALSE(once::is_literal_pattern(">"));
    EXPECT_FALSE(once::is_literal_pattern("a.*.c"));
}
