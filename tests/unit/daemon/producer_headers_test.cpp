#include "sinks/producer_headers.hpp"

#include <gtest/gtest.h>

using namespace once::relay;

// What both transport sinks send of a message's headers.
TEST(ProducerHeaders, KeepsAllowedDropsReserved) {
    Message m;
    m.id = "01a215da-0000-7000-8000-000000000001";
    m.headers = R"({"Host":"internal-admin.local","traceparent":"00-a-b-01","Content-Length":"2","X-Tenant":"t1",)"
                R"("Nats-Rollup":"all","bad name":"x","X-Crlf":"a\r\nb"})";
    auto h = producer_headers(m);
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(h[0], (std::pair<std::string, std::string>{"traceparent", "00-a-b-01"}));
    EXPECT_EQ(h[1], (std::pair<std::string, std::string>{"X-Tenant", "t1"}));
    m.headers = "[1]";   // not an object: sent without headers, not an exception
    EXPECT_TRUE(producer_headers(m).empty());
}

// A refused name is attacker-written: it must not be able to forge log lines.
TEST(ProducerHeaders, LoggableNameEscapesAndCuts) {
    EXPECT_EQ(loggable_header_name("X-Ok"), "X-Ok");
    EXPECT_EQ(loggable_header_name("a\r\nwarning: forged"), "a\\x0d\\x0awarning: forged");
    EXPECT_EQ(loggable_header_name("q\"\\"), "q\\x22\\x5c");
    EXPECT_EQ(loggable_header_name(std::string(100, 'n')), std::string(64, 'n') + "...");
}
