// Small pieces of the relay loop that need no database: reconnect backoff and stdout lines.
#include "relay.hpp"
#include "sinks/stdout_sink.hpp"
#include "core/topic.hpp"

#include <gtest/gtest.h>

using namespace once::relay;

TEST(Reconnect, BackoffGrowsIsCappedAndJittered) {
    Millis cap(30000);
    // window = min(cap, 100ms * 2^(n-1)); delay = u * (window + 1)
    EXPECT_EQ(reconnect_delay(1, cap, 0.9999).count(), 100);
    EXPECT_EQ(reconnect_delay(2, cap, 0.9999).count(), 200);
    EXPECT_EQ(reconnect_delay(5, cap, 0.9999).count(), 1600);
    EXPECT_EQ(reconnect_delay(30, cap, 0.99999).count(), 30000);
    EXPECT_EQ(reconnect_delay(1000, cap, 0.99999).count(), 30000);   // never overflows
    EXPECT_EQ(reconnect_delay(0, cap, 0.9999).count(), 100);
    EXPECT_EQ(reconnect_delay(10, cap, 0.5).count(), 15000);   // the relay draws u from [0.5, 1)
    EXPECT_LT(reconnect_delay(10, cap, 0.5).count(), reconnect_delay(10, cap, 0.99).count());
}

TEST(StdoutSink, JsonLine) {
    Message m;
    m.id = "0190a1b2-0000-7000-8000-000000000001";
    m.topic = "order.created";
    m.key = "order-\"7\"";
    m.has_key = true;
    m.payload = R"({"n": 1})";
    m.headers = R"({"h": "v"})";
    m.attempt = 2;
    EXPECT_EQ(StdoutSink::format_line(m),
              "{\"id\":\"0190a1b2-0000-7000-8000-000000000001\",\"topic\":\"order.created\",\"key\":\"order-\\\"7\\\"\","
              "\"attempt\":2,\"headers\":{\"h\": \"v\"},\"payload\":{\"n\": 1}}\n");
    m.has_key = false;
    m.headers.clear();
    EXPECT_NE(StdoutSink::format_line(m).find("\"key\":null,\"attempt\":2,\"headers\":null"), std::string::npos);
}

TEST(StdoutSink, DeliversOnFlush) {
    char buf[4096] = {0};
    std::FILE* f = fmemopen(buf, sizeof buf, "w");
    StdoutSink s(f);
    Message m;
    m.id = "x";
    m.topic = "t";
    m.payload = "1";
    s.submit(7, m);
    EXPECT_EQ(s.in_flight(), 1u);
    std::vector<Outcome> out;
    s.process(nullptr, 0, out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].token, 7u);
    EXPECT_EQ(out[0].verdict, Verdict::delivered);
    std::fclose(f);
    EXPECT_NE(std::string(buf).find("\"topic\":\"t\""), std::string::npos);
}

TEST(TopicPatterns, RelayExamplesMeanWhatTheDocsSay) {
    // --topics is handed to once.claim, which filters with the same core rules.
    EXPECT_TRUE(once::topic_matches("order.*", "order.created"));
    EXPECT_FALSE(once::topic_matches("order.*", "order.created.v2"));
    EXPECT_TRUE(once::topic_matches("order.>", "order.created.v2"));
    EXPECT_FALSE(once::topic_matches("order.>", "order"));
}
