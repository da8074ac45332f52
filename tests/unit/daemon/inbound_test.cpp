// The inbound relay's pure logic: --source URIs, the inbox's view of a JetStream message,
// per-key lanes and the fence, --db as the PostgreSQL sink's URI.
#include "inbound/inbound_lanes.hpp"
#include "inbound/inbound_message.hpp"
#include "inbound/inbound_source.hpp"
#include "inbound/inbox_uri.hpp"
#include "options.hpp"
#include "uri.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace once::relay;

namespace {

InboundSource parse(const std::string& s) { return parse_inbound_source(parse_uri(s)); }

std::string error_of(const std::string& s) {
    try {
        parse(s);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(InboundSource, ParsesEveryParameter) {
    auto s = parse("nats://u:pw@a:4223,b?stream=ORDERS&consumer=billing&filter=orders.>&source=shop&ack_wait=10s&fetch=50");
    ASSERT_EQ(s.servers.size(), 2u);
    EXPECT_EQ(s.servers[0], "nats://a:4223");
    EXPECT_EQ(s.servers[1], "nats://b:4222");
    EXPECT_EQ(s.user, "u");
    EXPECT_EQ(s.password, "pw");
    EXPECT_EQ(s.stream, "ORDERS");
    EXPECT_EQ(s.consumer, "billing");
    EXPECT_EQ(s.filter, "orders.>");
    EXPECT_EQ(s.inbox_source, "shop");
    EXPECT_EQ(s.ack_wait, Millis(10000));
    EXPECT_EQ(s.fetch, 50);
    EXPECT_EQ(s.description.find("pw"), std::string::npos);
}

TEST(InboundSource, DefaultsAndToken) {
    auto s = parse("nats://tok@h?stream=S&consumer=c");
    EXPECT_EQ(s.token, "tok");
    EXPECT_EQ(s.inbox_source, "S");   // the stream's name
    EXPECT_EQ(s.ack_wait, Millis(30000));
    EXPECT_TRUE(s.filter.empty());
}

TEST(InboundSource, RefusesWhatCannotWork) {
    EXPECT_NE(error_of("http://h?stream=S&consumer=c").find("not supported"), std::string::npos);
    EXPECT_NE(error_of("nats://h?consumer=c").find("stream=NAME"), std::string::npos);
    EXPECT_NE(error_of("nats://h?stream=S").find("consumer=NAME"), std::string::npos);
    EXPECT_NE(error_of("nats://h?stream=S.x&consumer=c").find("not a valid JetStream name"), std::string::npos);
    EXPECT_NE(error_of("nats://h?stream=S&consumer=a.b").find("not a valid JetStream name"), std::string::npos);
    EXPECT_NE(error_of("nats://h?stream=S&consumer=c&filter=a.>.b").find("not a subject filter"), std::string::npos);
    EXPECT_NE(error_of("nats://h?stream=S&consumer=c&filter=a..b").find("not a subject filter"), std::string::npos);
    EXPECT_NE(error_of("nats://h?stream=S&consumer=c&ack_wait=10").find("ack_wait"), std::string::npos);
    EXPECT_NE(error_of("nats://h?stream=S&consumer=c&ack_wait=2h").find("out of range"), std::string::npos);
    EXPECT_NE(error_of("nats://h?stream=S&consumer=c&fetch=0").find("fetch="), std::string::npos);
    EXPECT_NE(error_of("nats://h?stream=S&consumer=c&bogus=1").find("unknown URI parameter"), std::string::npos);
    EXPECT_EQ(error_of("nats://h?stream=S&consumer=c&filter=a.*.>"), "");
}

TEST(InboundMessage, TheOutboundRelaysHeadersGiveIdTopicKey) {
    StreamMessage m;
    m.stream = "ONCE";
    m.stream_seq = 7;
    m.subject = "once.orders.created";
    m.headers = {{"Nats-Msg-Id", "01A2233A-0698-75BD-ABD4-3F4F871E2903"}, {"Once-Topic", "orders.created"},
                 {"Once-Key", "order-1"}, {"traceparent", "00-abc-01"}, {"key", "order-1"}, {"key", "second"}};
    m.data = R"({"n": 1})";
    Message out = inbound_message(m);
    EXPECT_EQ(out.id, "01a2233a-0698-75bd-abd4-3f4f871e2903");
    EXPECT_EQ(out.topic, "orders.created");
    EXPECT_TRUE(out.has_key);
    EXPECT_EQ(out.key, "order-1");
    EXPECT_EQ(out.payload, R"({"n": 1})");
    EXPECT_EQ(out.headers, R"({"traceparent":"00-abc-01","key":"order-1"})");
}

TEST(InboundMessage, WithoutTheRelaysHeaders) {
    StreamMessage m;
    m.stream = "ONCE";
    m.stream_seq = 7;
    m.subject = "sensors.t1";
    m.data = "not json \"quoted\"\n";
    Message a = inbound_message(m);
    EXPECT_EQ(a.topic, "sensors.t1");
    EXPECT_FALSE(a.has_key);
    EXPECT_TRUE(a.headers.empty());
    EXPECT_EQ(a.payload, R"("not json \"quoted\"\n")");
    EXPECT_EQ(a.id, name_based_uuid("ONCE:7"));   // stable across redeliveries of seq 7
    EXPECT_EQ(a.id[14], '5');                     // version 5
    m.stream_seq = 8;
    EXPECT_NE(inbound_message(m).id, a.id);
    m.headers = {{"Nats-Msg-Id", "order-42"}};
    EXPECT_EQ(inbound_message(m).id, name_based_uuid("nats-msg-id:order-42"));
}

TEST(InboundMessage, JsonStringReplacesWhatIsNotUtf8) {
    EXPECT_EQ(json_string(std::string("a\xff" "b", 3)), "\"a\\ufffdb\"");
    EXPECT_EQ(json_string(std::string("\0x", 2)), "\"\\ufffdx\"");
    EXPECT_EQ(json_string("\xc3\xa9"), "\"\xc3\xa9\"");
    EXPECT_EQ(json_string("\x01"), "\"\\u0001\"");
    EXPECT_EQ(canonical_uuid("not-a-uuid"), "");
}

TEST(InboundLanes, OneMessageOfAKeyAtATimeInStreamOrder) {
    InboundLanes l;
    auto now = InboundLanes::Clock::now();
    l.add(1, "a", true);
    l.add(2, "b", true);
    l.add(3, "a", true);
    l.add(4, "", false);
    EXPECT_EQ(l.take_ready(now, 10), (std::vector<uint64_t>{1, 2, 4}));
    EXPECT_TRUE(l.take_ready(now, 10).empty());   // 3 waits for 1
    l.done(1);
    EXPECT_EQ(l.take_ready(now, 10), (std::vector<uint64_t>{3}));
    EXPECT_FALSE(l.add(3, "a", true));            // a redelivery of a held message
}

TEST(InboundLanes, ARetryKeepsItsKeyBehindIt) {
    InboundLanes l;
    auto now = InboundLanes::Clock::now();
    l.add(1, "a", true);
    l.add(2, "a", true);
    l.add(3, "b", true);
    EXPECT_EQ(l.take_ready(now, 10), (std::vector<uint64_t>{1, 3}));
    EXPECT_EQ(l.retry_at(1, now + std::chrono::seconds(1)), 1);
    l.done(3);
    EXPECT_TRUE(l.take_ready(now, 10).empty());   // 1 not due yet, 2 behind it
    ASSERT_TRUE(l.next_retry().has_value());
    EXPECT_EQ(l.take_ready(now + std::chrono::seconds(2), 10), (std::vector<uint64_t>{1}));
    EXPECT_EQ(l.failures(1), 1);
}

// JetStream redelivers in the order AckWait ran out, not in stream order: a message the killed
// run kept alive with progress notes (7) comes back after a later one of its key (8). At
// start the redeliveries are gathered until all are back, so each key's lowest goes first.
TEST(InboundLanes, RedeliveriesAtStartGoInStreamOrderOnceAllAreBack) {
    InboundLanes l;
    auto now = InboundLanes::Clock::now();
    l.start(10, 10, 3, now, std::chrono::seconds(7));   // 3 unacknowledged: 7, 8 and 9
    EXPECT_EQ(l.awaited_redeliveries(), 3);
    l.add(8, "a", true);
    l.add(9, "b", true);
    EXPECT_TRUE(l.take_ready(now, 10).empty()) << "7 is not back yet: 8 would overtake it";
    l.add(7, "a", true);
    EXPECT_EQ(l.awaited_redeliveries(), 0);
    EXPECT_EQ(l.take_ready(now, 10), (std::vector<uint64_t>{7, 9}));
    // One that never comes back (its ack landed after all) holds them up to the bound only.
    InboundLanes bounded;
    bounded.start(10, 10, 2, now, std::chrono::seconds(7));
    bounded.add(9, "a", true);
    EXPECT_TRUE(bounded.take_ready(now + std::chrono::seconds(6), 10).empty());
    EXPECT_EQ(bounded.take_ready(now + std::chrono::seconds(8), 10), (std::vector<uint64_t>{9}));
}

TEST(InboundLanes, FenceAtStartAndOnALostDelivery) {
    InboundLanes l;
    auto now = InboundLanes::Clock::now();
    l.start(10, 10, 3);   // 3 unacknowledged deliveries up to stream seq 10
    ASSERT_TRUE(l.fence().has_value());
    EXPECT_EQ(*l.fence(), 10u);
    EXPECT_FALSE(l.delivered(11, 12));
    l.add(12, "a", true);
    EXPECT_FALSE(l.delivered(12, 9));
    l.add(9, "a", true);   // the redelivery comes back: it goes first, 12 waits
    EXPECT_EQ(l.take_ready(now, 10), (std::vector<uint64_t>{9}));
    l.done(9);
    EXPECT_TRUE(l.take_ready(now, 10).empty());   // above the fence
    l.ack_floor(9);
    EXPECT_TRUE(l.fence().has_value());
    l.ack_floor(10);
    EXPECT_FALSE(l.fence().has_value());
    EXPECT_EQ(l.take_ready(now, 10), (std::vector<uint64_t>{12}));
    // A consumer sequence that skips a number: a delivery was lost.
    EXPECT_TRUE(l.delivered(14, 20));
    EXPECT_EQ(*l.fence(), 19u);
    InboundLanes fresh;
    fresh.start(5, 5, 0);
    EXPECT_FALSE(fresh.fence().has_value());
}

TEST(InboxUri, KeywordConninfoBecomesAUri) {
    EXPECT_EQ(inbox_database_uri("postgresql://u@h/db"), "postgresql://u@h/db");
    std::string u = inbox_database_uri("host=/tmp/x dbname=shop user=relay");
    EXPECT_EQ(u.rfind("postgresql://?", 0), 0u);
    EXPECT_NE(u.find("dbname=shop"), std::string::npos);
    EXPECT_NE(u.find("host=%2Ftmp%2Fx"), std::string::npos);
    EXPECT_THROW(inbox_database_uri("host='unterminated"), std::invalid_argument);
}

TEST(InboundOptions, SourceInsteadOfSink) {
    const char* ok[] = {"once-relay", "--db", "dbname=x", "--source", "nats://h?stream=S&consumer=c"};
    EXPECT_EQ(parse_options(5, ok).source, "nats://h?stream=S&consumer=c");
    const char* both[] = {"once-relay", "--db", "dbname=x", "--source", "nats://h?stream=S&consumer=c", "--sink", "stdout:"};
    EXPECT_THROW(parse_options(7, both), std::runtime_error);
    const char* wal[] = {"once-relay", "--db", "dbname=x", "--source", "nats://h?stream=S&consumer=c", "--transport", "wal"};
    EXPECT_THROW(parse_options(7, wal), std::runtime_error);
    const char* neither[] = {"once-relay", "--db", "dbname=x"};
    EXPECT_THROW(parse_options(3, neither), std::runtime_error);
}
