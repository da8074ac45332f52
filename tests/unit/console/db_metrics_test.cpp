#include "console_options.hpp"
#include "db_metrics.hpp"

#include <gtest/gtest.h>

using namespace once::console;

namespace {
bool has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }
}  // namespace

TEST(DbMetrics, RelaysSlotsTopicsAndKeys) {
    DbView v;
    v.up = true;
    v.database = "shop";
    v.relays = {RelayBeat{"r1", "h1", "table", "relaying", 4.5, true, 12},
                RelayBeat{"r2", "h2", "wal", "stopped", 90, false, 0}};
    v.slots = {WalSlot{"once_relay", false, 123456, 1000000}, WalSlot{"lost", false, std::nullopt, std::nullopt}};
    TopicState a;
    a.topic = "a";
    a.ready = 3;
    a.delayed = 1;
    a.in_flight = 2;
    a.blocked = 4;
    a.dead = 1;
    a.oldest_ready_age = 7.25;
    a.retrying = 2;
    a.oldest_retrying_age = 30;
    v.topics = {a};
    v.blocked_keys = 1;
    v.oldest_blocked_key_age = 60;
    std::set<std::string> seen;
    std::string m = render_db_metrics(v, seen);
    EXPECT_TRUE(has(m, "once_db_up{database=\"shop\"} 1"));
    EXPECT_TRUE(has(m, "once_db_relay_heartbeat_age_seconds{database=\"shop\",relay=\"r1\",host=\"h1\",transport=\"table\",state=\"relaying\"} 4.5"));
    EXPECT_TRUE(has(m, "once_db_relay_alive{database=\"shop\",relay=\"r2\",host=\"h2\"} 0"));
    EXPECT_TRUE(has(m, "once_db_relays_alive{database=\"shop\"} 1"));
    EXPECT_TRUE(has(m, "once_db_wal_slot_retained_bytes{database=\"shop\",slot=\"once_relay\"} 123456"));
    EXPECT_TRUE(has(m, "once_db_wal_slot_safe_bytes{database=\"shop\",slot=\"once_relay\"} 1000000"));
    EXPECT_EQ(m.find("once_db_wal_slot_retained_bytes{database=\"shop\",slot=\"lost\"}"), std::string::npos)
        << "an invalidated slot has no retained bytes";
    EXPECT_TRUE(has(m, "once_db_wal_slot_active{database=\"shop\",slot=\"lost\"} 0"));
    EXPECT_TRUE(has(m, "once_db_outbox_backlog{database=\"shop\",topic=\"a\"} 10"));
    EXPECT_TRUE(has(m, "once_db_outbox_dead{database=\"shop\",topic=\"a\"} 1"));
    EXPECT_TRUE(has(m, "once_db_outbox_oldest_ready_age_seconds{database=\"shop\",topic=\"a\"} 7.25"));
    EXPECT_TRUE(has(m, "once_db_outbox_retrying{database=\"shop\",topic=\"a\"} 2"));
    EXPECT_TRUE(has(m, "once_db_blocked_keys{database=\"shop\"} 1"));
    EXPECT_TRUE(has(m, "once_db_oldest_blocked_key_age_seconds{database=\"shop\"} 60"));
    EXPECT_TRUE(has(m, "# TYPE once_db_outbox_dead gauge"));
}

TEST(DbMetrics, ATopicSeenBeforeStaysAtZeroSoItsFirstDeadLetterIsAStep) {
    std::set<std::string> seen;
    DbView v;
    v.up = true;
    v.database = "d";
    TopicState t;
    t.topic = "orders";
    t.ready = 1;
    v.topics = {t};
    render_db_metrics(v, seen);
    v.topics.clear();   // delivered: the topic has no row now
    std::string m = render_db_metrics(v, seen);
    EXPECT_TRUE(has(m, "once_db_outbox_dead{database=\"d\",topic=\"orders\"} 0"));
    EXPECT_TRUE(has(m, "once_db_outbox_backlog{database=\"d\",topic=\"orders\"} 0"));
}

TEST(DbMetrics, AFailedReadIsUpZeroAndNothingElse) {
    std::set<std::string> seen{"orders"};
    DbView v;
    v.database = "d";
    std::string m = render_db_metrics(v, seen);
    EXPECT_TRUE(has(m, "once_db_up{database=\"d\"} 0"));
    EXPECT_EQ(m.find("once_db_outbox_dead{"), std::string::npos);
}

TEST(DbMetrics, SeveralDatabasesShareEachFamilysHeaderAndKeepTheirOwnTopics) {
    DbView shop, billing, down;
    shop.up = billing.up = true;
    shop.database = "shop";
    billing.database = "billing";
    down.database = "gone";
    TopicState t;
    t.topic = "orders";
    t.dead = 2;
    shop.topics = {t};
    std::vector<std::set<std::string>> seen(3);
    std::string m = render_db_metrics({shop, billing, down}, seen);
    size_t first = m.find("# TYPE once_db_up gauge\n");
    ASSERT_NE(first, std::string::npos);
    EXPECT_EQ(m.find("# TYPE once_db_up gauge\n", first + 1), std::string::npos) << m;
    EXPECT_TRUE(has(m, "once_db_up{database=\"shop\"} 1"));
    EXPECT_TRUE(has(m, "once_db_up{database=\"billing\"} 1"));
    EXPECT_TRUE(has(m, "once_db_up{database=\"gone\"} 0"));
    EXPECT_TRUE(has(m, "once_db_outbox_dead{database=\"shop\",topic=\"orders\"} 2"));
    EXPECT_EQ(m.find("once_db_outbox_dead{database=\"billing\""), std::string::npos) << m;
    EXPECT_EQ(seen[0], std::set<std::string>{"orders"});
    EXPECT_TRUE(seen[1].empty());
    // Each family's samples follow its own header: the shop's and the billing's up lines are
    // under the one TYPE line, before the next family's.
    EXPECT_LT(m.find("once_db_up{database=\"billing\"}"), m.find("# TYPE once_db_metrics_read_seconds"));
}

TEST(DbMetrics, MetricsListenIsOffByDefaultAndChecked) {
    const char* plain[] = {"once-console", "--db", "x", "--credentials", "u"};
    EXPECT_EQ(parse_options(5, plain).metrics_listen, "");
    const char* on[] = {"once-console", "--db", "x", "--credentials", "u", "--metrics-listen", "127.0.0.1:9188"};
    EXPECT_EQ(parse_options(7, on).metrics_listen, "127.0.0.1:9188");
    const char* bad[] = {"once-console", "--db", "x", "--credentials", "u", "--metrics-listen", "9188"};
    EXPECT_THROW(parse_options(7, bad), std::runtime_error);
}
