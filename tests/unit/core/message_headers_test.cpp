#include "core/message_headers.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

using once::header_refusal;
using once::select_headers;

// Trace context and the application's own names must keep reaching the receiver: a later
// issue forwards trace context, and ordinary application headers are the point of headers.
TEST(MessageHeaders, StandardAndApplicationNamesPass) {
    for (const char* name : {"traceparent", "tracestate", "baggage", "X-Tenant", "X-Request-Id", "Accept-Language",
                             "x-count", "Api-Version", "Nats", "Once", "Hostname", "X-Onceler", "Content-Language"})
        EXPECT_EQ(header_refusal(name, "v"), std::nullopt) << name;
    EXPECT_EQ(header_refusal("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), std::nullopt);
    EXPECT_EQ(header_refusal("X-Note", "caf\xc3\xa9 \ttabbed"), std::nullopt);   // obs-text and HTAB are allowed
    EXPECT_EQ(header_refusal("X-Empty", ""), std::nullopt);
}

TEST(MessageHeaders, TransportAndRelayNamesAreRefusedInAnyCase) {
    for (const char* name : {"Host", "host", "HOST", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
                             "Upgrade", "TE", "Trailer", "Expect", "Authorization", "Cookie", "Set-Cookie",
                             "Content-Type", "Content-Encoding", "Idempotency-Key", "idempotency-key", "User-Agent",
                             "Forwarded", "X-Real-IP", "HTTP2-Settings"})
        EXPECT_NE(header_refusal(name, "v"), std::nullopt) << name;
}

TEST(MessageHeaders, ReservedFamiliesAreRefused) {
    for (const char* name : {"Proxy-Authorization", "proxy-connection", "X-Once-Topic", "x-once-key", "X-Once-Attempt",
                             "Once-Topic", "once-key", "webhook-id", "Webhook-Signature", "webhook-timestamp", "ce-id",
                             "CE-Source", "ce-type", "Nats-Msg-Id", "nats-msg-id", "Nats-Expected-Last-Sequence",
                             "Nats-Expected-Stream", "Nats-Rollup", "Nats-TTL", "X-Forwarded-For", "x-forwarded-host"}) {
        auto why = header_refusal(name, "v");
        ASSERT_NE(why, std::nullopt) << name;
        EXPECT_NE(why->find("reserved"), std::string::npos) << *why;
    }
}

TEST(MessageHeaders, NamesMustBeTokens) {
    for (std::string name : {std::string(), std::string("bad name"), std::string("a:b"), std::string("a\r\nHost"),
                             std::string(":authority"), std::string("x(y)"), std::string("caf\xc3\xa9"),
                             std::string("nul\0x", 5), std::string(129, 'n')})
        EXPECT_NE(header_refusal(name, "v"), std::nullopt) << name;
    EXPECT_EQ(header_refusal(std::string(128, 'n'), "v"), std::nullopt);
    EXPECT_EQ(header_refusal("a!#$%&'*+-.^_`|~9", "v"), std::nullopt);   // every tchar
}

TEST(MessageHeaders, ValuesMayNotCarryControlCharactersOrBeHuge) {
    for (std::string value : {std::string("a\r\nHost: evil"), std::string("a\rb"), std::string("a\nb"),
                              std::string("a\0b", 3), std::string("bell\x07"), std::string("del\x7f"),
                              std::string(4097, 'v')}) {
        auto why = header_refusal("X-Ok", value);
        ASSERT_NE(why, std::nullopt);
        // The reason is logged: it must not echo the value (it may hold a secret).
        EXPECT_EQ(why->find(value), std::string::npos);
    }
    EXPECT_EQ(header_refusal("X-Ok", std::string(4096, 'v')), std::nullopt);
}

TEST(MessageHeaders, SelectionKeepsOrderAndRefusesReservedOnes) {
    auto sel = select_headers({{"Host", "internal-admin.local"}, {"traceparent", "00-a-b-01"}, {"Content-Length", "2"},
                               {"X-Tenant", "t1"}, {"Nats-Msg-Id", "forged"}});
    ASSERT_EQ(sel.kept.size(), 2u);
    EXPECT_EQ(sel.kept[0], (std::pair<std::string, std::string>{"traceparent", "00-a-b-01"}));
    EXPECT_EQ(sel.kept[1], (std::pair<std::string, std::string>{"X-Tenant", "t1"}));
    ASSERT_EQ(sel.refused.size(), 3u);
    EXPECT_EQ(sel.refused[0].name, "Host");
    EXPECT_EQ(sel.refused[1].name, "Content-Length");
    EXPECT_EQ(sel.refused[2].name, "Nats-Msg-Id");
}

TEST(MessageHeaders, SelectionLimitsCountAndTotalSize) {
    std::vector<std::pair<std::string, std::string>> many;
    for (size_t i = 0; i < once::kMaxHeaderCount + 3; ++i) many.emplace_back("X-H" + std::to_string(i), "v");
    auto sel = select_headers(many);
    EXPECT_EQ(sel.kept.size(), once::kMaxHeaderCount);
    ASSERT_EQ(sel.refused.size(), 3u);
    EXPECT_EQ(sel.refused[0].name, "X-H" + std::to_string(once::kMaxHeaderCount));

    std::vector<std::pair<std::string, std::string>> big;
    for (int i = 0; i < 3; ++i) big.emplace_back("X-B" + std::to_string(i), std::string(4000, 'v'));
    auto s2 = select_headers(big);
    ASSERT_EQ(s2.kept.size(), 2u);   // 2 x 4004 bytes fit in 8192, the third does not
    ASSERT_EQ(s2.refused.size(), 1u);
    EXPECT_EQ(s2.refused[0].name, "X-B2");
}
