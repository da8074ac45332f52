#include "sinks/cloudevents.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>

using namespace once::relay;

namespace {

std::map<std::string, std::string> as_map(const std::vector<std::pair<std::string, std::string>>& h) {
    std::map<std::string, std::string> m;
    for (const auto& [k, v] : h) EXPECT_TRUE(m.emplace(k, v).second) << "duplicate " << k;
    return m;
}

Message message() {
    Message m;
    m.id = "0192f4c6-5b1e-7c3a-9d2e-1f0a2b3c4d5e";
    m.topic = "order.paid";
    m.key = "order 42 \"é\"";
    m.has_key = true;
    m.payload = R"({"n":1})";
    m.created_at = "2026-11-26 06:19:12.123456+00";
    return m;
}

}  // namespace

TEST(CloudEvents, HttpBindingAttributes) {
    auto h = as_map(cloudevents_headers(message(), "/pg_once/shop/relay-1", CloudEventsBinding::http));
    EXPECT_EQ(h["ce-specversion"], "1.0");
    EXPECT_EQ(h["ce-id"], "0192f4c6-5b1e-7c3a-9d2e-1f0a2b3c4d5e");
    EXPECT_EQ(h["ce-source"], "/pg_once/shop/relay-1");
    EXPECT_EQ(h["ce-type"], "order.paid");
    EXPECT_EQ(h["ce-subject"], "order%2042%20%22%C3%A9%22");
    EXPECT_EQ(h["ce-time"], "2026-11-26T06:19:12.123456+00:00");
    EXPECT_EQ(h.count("ce-datacontenttype"), 0u);   // HTTP: the Content-Type header
    EXPECT_EQ(h.size(), 6u);
}

TEST(CloudEvents, NatsBindingCarriesDataContentType) {
    Message m = message();
    m.has_key = false;
    m.key.clear();
    auto h = as_map(cloudevents_headers(m, "/s", CloudEventsBinding::nats));
    EXPECT_EQ(h["ce-datacontenttype"], "application/json");
    EXPECT_EQ(h.count("ce-subject"), 0u);
    EXPECT_EQ(h.size(), 6u);
}

TEST(CloudEvents, PercentEncodingFollowsTheBindings) {
    // The binding's own example.
    EXPECT_EQ(ce_percent_encode("Euro \xE2\x82\xAC \xF0\x9F\x98\x80"), "Euro%20%E2%82%AC%20%F0%9F%98%80");
    EXPECT_EQ(ce_percent_encode("a%b\"c\r\nd\x7f"), "a%25b%22c%0D%0Ad%7F");
    EXPECT_EQ(ce_percent_encode("https://x.example/a?b=c&d"), "https://x.example/a?b=c&d");
}

TEST(CloudEvents, TimeFromPostgresIsoText) {
    EXPECT_EQ(rfc3339_from_pg("2026-11-26 06:19:12+00"), "2026-11-26T06:19:12+00:00");
    EXPECT_EQ(rfc3339_from_pg("2026-11-26 06:19:12.5-03"), "2026-11-26T06:19:12.5-03:00");
    EXPECT_EQ(rfc3339_from_pg("2026-11-26 06:19:12.123456+05:30"), "2026-11-26T06:19:12.123456+05:30");
    EXPECT_EQ(rfc3339_from_pg("1890-01-01 00:00:00+00:53:28"), std::nullopt);
    EXPECT_EQ(rfc3339_from_pg("0044-03-15 12:00:00+00 BC"), std::nullopt);
    EXPECT_EQ(rfc3339_from_pg("infinity"), std::nullopt);
    EXPECT_EQ(rfc3339_from_pg("Thu Nov 26 06:19:12.123456 2026 UTC"), std::nullopt);   // DateStyle Postgres
    EXPECT_EQ(rfc3339_from_pg("2026-11-26 06:19:12."), std::nullopt);
    Message m = message();
    m.created_at = "infinity";
    EXPECT_EQ(as_map(cloudevents_headers(m, "/s", CloudEventsBinding::http)).count("ce-time"), 0u);
}

TEST(CloudEvents, DefaultSource) {
    EXPECT_EQ(default_cloudevents_source("shop", "once-relay"), "/pg_once/shop/once-relay");
    EXPECT_EQ(default_cloudevents_source("my shop/eu", "r@1"), "/pg_once/my%20shop%2Feu/r%401");
}
