#include "page_test_util.hpp"
#include "pages/overview.hpp"

#include <gtest/gtest.h>

using namespace once::console;

namespace {

TopicRow quiet_topic(const std::string& name) { return {name, "0", "0", "0", "0", "0", std::nullopt}; }
RelayRow busy_relay() { return {"relay-1", "1", "127.0.0.1", "2026-11-26 04:00:00.123+00", 3}; }

// A healthy overview: one quiet topic, one active relay, no failed saga.
OverviewModel healthy() {
    OverviewModel m;
    m.topics.push_back(quiet_topic("orders"));
    m.relays.push_back(busy_relay());
    m.saga_counts = {{"running", "2"}, {"failed", "0"}};
    return m;
}

}  // namespace

TEST(OverviewAttention, NothingWhenHealthy) {
    Attention a = overview_attention(healthy());
    EXPECT_EQ(a.rows, 0);
    EXPECT_EQ(a.topic_reasons, std::vector<std::string>{""});
    EXPECT_EQ(a.relay_stalled, std::vector<bool>{false});
    EXPECT_FALSE(a.no_relay_while_ready);
    EXPECT_FALSE(a.failed_sagas);
}

TEST(OverviewAttention, DeadLetters) {
    OverviewModel m = healthy();
    m.topics[0].dead = "3";
    Attention a = overview_attention(m);
    EXPECT_EQ(a.topic_reasons[0], "dead letters");
    EXPECT_EQ(a.rows, 1);
}

TEST(OverviewAttention, BlockedKeys) {
    OverviewModel m = healthy();
    m.topics[0].blocked = "1";
    EXPECT_EQ(overview_attention(m).topic_reasons[0], "blocked keys");
}

TEST(OverviewAttention, OldestReadyMessageOverFiveMinutes) {
    OverviewModel m = healthy();
    m.topics[0].age = 300;
    EXPECT_EQ(overview_attention(m).rows, 0);
    m.topics[0].age = 301;
    EXPECT_EQ(overview_attention(m).topic_reasons[0], "oldest ready message waits 5 min");
}

TEST(OverviewAttention, ReasonsOfOneTopicMakeOneRow) {
    OverviewModel m = healthy();
    m.topics[0].dead = "1";
    m.topics[0].blocked = "1";
    m.topics[0].age = 7200;
    Attention a = overview_attention(m);
    EXPECT_EQ(a.topic_reasons[0], "dead letters; blocked keys; oldest ready message waits 2 h");
    EXPECT_EQ(a.rows, 1);
}

TEST(OverviewAttention, RelayIdleOverTwoMinutes) {
    OverviewModel m = healthy();
    m.relays[0].idle = 120;
    EXPECT_EQ(overview_attention(m).rows, 0);
    m.relays[0].idle = 121;
    Attention a = overview_attention(m);
    EXPECT_EQ(a.relay_stalled, std::vector<bool>{true});
    EXPECT_EQ(a.rows, 1);
}

TEST(OverviewAttention, NoRelayWhileMessagesAreReady) {
    OverviewModel m = healthy();
    m.relays.clear();
    EXPECT_FALSE(overview_attention(m).no_relay_while_ready);   // nothing ready: nothing waits
    m.topics[0].ready = "4";
    Attention a = overview_attention(m);
    EXPECT_TRUE(a.no_relay_while_ready);
    EXPECT_EQ(a.rows, 1);
    m.relays.push_back(busy_relay());
    EXPECT_FALSE(overview_attention(m).no_relay_while_ready);
}

TEST(OverviewAttention, FailedSagas) {
    OverviewModel m = healthy();
    m.saga_counts["failed"] = "2";
    Attention a = overview_attention(m);
    EXPECT_TRUE(a.failed_sagas);
    EXPECT_EQ(a.rows, 1);
    m.saga_counts.erase("failed");
    EXPECT_FALSE(overview_attention(m).failed_sagas);
}

TEST(OverviewPage, SaysWhenNothingNeedsAttention) {
    OverviewModel m = healthy();
    std::string html = render_overview(m, overview_attention(m));
    EXPECT_TRUE(contains(html, "<div class=flash id=attention>Nothing needs attention.</div>"));
    EXPECT_FALSE(contains(html, "class=attn"));
}

TEST(OverviewPage, CountsAndMarksTheRowsThatNeedAttention) {
    OverviewModel m = healthy();
    m.topics[0].dead = "1";
    m.saga_counts["failed"] = "1";
    std::string html = render_overview(m, overview_attention(m));
    EXPECT_TRUE(contains(html, "2 row(s) need attention (marked red)."));
    EXPECT_TRUE(contains(html, "<tr class=attn><td><a href=\"/dead?topic=orders\">orders</a></td>"));
    EXPECT_TRUE(contains(html, "<td>dead letters</td>"));
}

TEST(OverviewPage, EscapesTopicsAndRelays) {
    OverviewModel m = healthy();
    m.topics[0].topic = "<script>";
    m.relays[0].relay = "r&d";
    std::string html = render_overview(m, overview_attention(m));
    EXPECT_TRUE(contains(html, ">&lt;script&gt;</a>"));
    EXPECT_TRUE(contains(html, "%3Cscript%3E"));
    EXPECT_TRUE(contains(html, "<td>r&amp;d</td>"));
    EXPECT_FALSE(contains(html, "<script>"));
}

TEST(OverviewPage, EmptyOutboxAndNoRelay) {
    OverviewModel m;
    std::string html = render_overview(m, overview_attention(m));
    EXPECT_TRUE(contains(html, "The outbox is empty."));
    EXPECT_TRUE(contains(html, "<tr><td colspan=5>No relay is connected to this database.</td></tr>"));
}

TEST(OverviewPage, CapsCounts) {
    OverviewModel m = healthy();
    m.topics[0].ready = "1000";
    m.saga_counts["completed"] = "1000";
    std::string html = render_overview(m, overview_attention(m));
    EXPECT_TRUE(contains(html, "<td class=num>1000+</td>"));
    EXPECT_TRUE(contains(html, "<a href=\"/sagas?status=completed\">1000+</a>"));
}
