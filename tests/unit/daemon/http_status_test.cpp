#include "sinks/http_status.hpp"

#include <gtest/gtest.h>

using namespace once::relay;

TEST(HttpStatus, Classification) {
    for (long s : {200, 201, 202, 204, 299}) EXPECT_EQ(classify_http_status(s), Verdict::delivered) << s;
    for (long s : {408, 425, 429, 500, 502, 503, 504, 599, 0}) EXPECT_EQ(classify_http_status(s), Verdict::retry) << s;
    for (long s : {400, 401, 403, 404, 409, 410, 413, 422, 301, 302}) EXPECT_EQ(classify_http_status(s), Verdict::dead) << s;
}

TEST(HttpStatus, RetryAfterSeconds) {
    EXPECT_EQ(parse_retry_after("120", 0)->count(), 120000);
    EXPECT_EQ(parse_retry_after(" 2\r\n", 0)->count(), 2000);
    EXPECT_EQ(parse_retry_after("0", 0)->count(), 0);
    EXPECT_EQ(parse_retry_after("99999999999", 0)->count(), 24LL * 3600 * 1000);   // capped
    EXPECT_FALSE(parse_retry_after("", 0));
    EXPECT_FALSE(parse_retry_after("soon", 0));
}

TEST(HttpStatus, RetryAfterDate) {
    // Wed, 21 Oct 2015 07:28:00 GMT = 1445412480
    EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480 - 30)->count(), 30000);
    EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480 + 30)->count(), 0);   // past: now
}

TEST(HttpStatus, MessageHeaders) {
    auto h = message_headers(R"({"traceparent":"00-abc-01","X-Count":3,"nested":{"a":[1,2]},"bad name":"x","crlf":"a\r\nb","u":"caf\u00e9"})");
    ASSERT_EQ(h.size(), 4u);
    EXPECT_EQ(h[0], std::make_pair(std::string("traceparent"), std::string("00-abc-01")));
    EXPECT_EQ(h[1], std::make_pair(std::string("X-Count"), std::string("3")));
    EXPECT_EQ(h[2], std::make_pair(std::string("nested"), std::string("{\"a\":[1,2]}")));
    EXPECT_EQ(h[3].second, "caf\xc3\xa9");
    std::vector<std::string> skipped;
    message_headers(R"({"bad name":"x","crlf":"a\nb"})", &skipped);
    EXPECT_EQ(skipped.size(), 2u);
    EXPECT_TRUE(message_headers("").empty());
    EXPECT_TRUE(message_headers("null").empty());
    EXPECT_TRUE(message_headers("{}").empty());
    EXPECT_THROW(message_headers("[1,2]"), std::invalid_argument);
    EXPECT_THROW(message_headers("{\"a\" 1}"), std::invalid_argument);
}

TEST(HttpStatus, BodyExcerpt) {
    EXPECT_EQ(body_excerpt("bad\nrequest\n"), "bad request");
    EXPECT_EQ(body_excerpt(std::string(300, 'x'), 10), "xxxxxxxxxx...");
}
