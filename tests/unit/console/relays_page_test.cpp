#include "page_test_util.hpp"
#include "pages/overview.hpp"
#include "pages/relays.hpp"

#include <gtest/gtest.h>

using namespace once::console;

namespace {

RelayBeatRow beat(const std::string& name, const std::string& state, double age, bool alive) {
    RelayBeatRow r;
    r.relay = name;
    r.host = "h1";
    r.pid = "4242";
    r.transport = "wal";
    r.sink = "nats://127.0.0.1:4222?stream=S";
    r.state = state;
    r.state_since = "2026-11-28 17:00:00.5+00";
    r.last_beat = "2026-11-28 17:10:00.5+00";
    r.started_at = "2026-11-28 16:00:00.5+00";
    r.version = "0.3";
    r.age = age;
    r.beat_interval = 10;
    r.messages_per_s = 12.25;
    r.alive = alive;
    return r;
}

OverviewModel quiet_with(std::vector<RelayBeatRow> beats) {
    OverviewModel m;
    m.topics.push_back({"orders", "0", "0", "0", "0", "0", std::nullopt});
    m.relays.push_back({"r1", "3", "local", "2026-11-28 16:00:00+00", 1});
    m.saga_counts = {{"failed", "0"}};
    m.beats = std::move(beats);
    return m;
}

}  // namespace

TEST(RelaysPage, EveryFigureOfABeatAndOnlyTheDeadRed) {
    RelaysModel m;
    m.rows = {beat("r<1>", "streaming", 3, true), beat("r2", "sink down", 95, false), beat("r3", "stopped", 30, false)};
    EXPECT_EQ(relays_red(m), (std::vector<bool>{false, true, true}));
    std::string html = render_relays(m);
    EXPECT_TRUE(contains(html, "<tr><td>r&lt;1&gt;</td><td>h1</td><td class=num>4242</td><td>wal</td>"
                               "<td>nats://127.0.0.1:4222?stream=S</td><td>streaming since 2026-11-28 17:00:00</td>"
                               "<td>3 s ago</td><td class=num>12.2</td>"));
    EXPECT_TRUE(contains(html, "<tr class=attn><td>r2</td>"));
    EXPECT_TRUE(contains(html, "95 s ago (not alive)"));
    EXPECT_TRUE(contains(html, "30 s ago (stopped)"));
}

TEST(RelaysPage, NoRelayAtAllIsRed) {
    EXPECT_TRUE(contains(render_relays({}), "<tr class=attn><td colspan=10>No relay has written a heartbeat"));
}

TEST(OverviewHeartbeats, HealthyRelayNeedsNothing) {
    Attention a = overview_attention(quiet_with({beat("r1", "streaming", 2, true)}));
    EXPECT_EQ(a.rows, 0);
    EXPECT_FALSE(a.no_relay_alive_while_waiting);
    EXPECT_TRUE(contains(render_overview(quiet_with({beat("r1", "streaming", 2, true)}), a), "Nothing needs attention."));
}

// The on-call report: the only relay stopped (WAL transport), its messages in the slot, none
// in the table: the overview said "Nothing needs attention".
TEST(OverviewHeartbeats, StoppedRelayWithASlotNobodyStreamsIsRed) {
    OverviewModel m = quiet_with({beat("r1", "stopped", 40, false)});
    m.relays.clear();
    m.idle_slots = {"once_relay"};
    Attention a = overview_attention(m);
    EXPECT_TRUE(a.no_relay_alive_while_waiting);
    EXPECT_EQ(a.beat_red, std::vector<bool>{true});
    std::string html = render_overview(m, a);
    EXPECT_FALSE(contains(html, "Nothing needs attention"));
    EXPECT_TRUE(contains(html, "No relay is alive: nobody streams WAL slot once_relay."));
    EXPECT_TRUE(contains(html, "relay r1 last seen 40 s ago"));
}

TEST(OverviewHeartbeats, KilledRelayWithReadyMessagesIsRed) {
    OverviewModel m = quiet_with({beat("r1", "relaying", 25, false)});
    m.relays.clear();
    m.topics[0].ready = "150";
    Attention a = overview_attention(m);
    EXPECT_TRUE(a.no_relay_while_ready);
    EXPECT_FALSE(a.no_relay_alive_while_waiting);   // (the row of the connections says it)
    EXPECT_EQ(a.rows, 2);                            // no connection while ready, and r1's beat
    std::string html = render_overview(m, a);
    EXPECT_TRUE(contains(html, "No relay is connected to this database: ready messages wait for one."));
    EXPECT_TRUE(contains(html, "relay r1 last seen 25 s ago"));
}

// Connected but silent (hung, its heartbeat thread stuck behind a database that does not
// answer it): its connections alone do not make it alive.
TEST(OverviewHeartbeats, HungRelayWithReadyMessagesIsRed) {
    OverviewModel m = quiet_with({beat("r1", "relaying", 25, false)});
    m.topics[0].ready = "150";
    Attention a = overview_attention(m);
    EXPECT_TRUE(a.no_relay_alive_while_waiting);
    EXPECT_TRUE(contains(render_overview(m, a), "No relay is alive: 150 ready message(s) wait in the outbox."));
}

TEST(OverviewHeartbeats, RelaysOlderThanHeartbeatsAreTrustedByTheirConnections) {
    OverviewModel m = quiet_with({});
    m.topics[0].ready = "150";
    EXPECT_FALSE(overview_attention(m).no_relay_alive_while_waiting);
}

TEST(OverviewHeartbeats, ACrashedRelayIsRedEvenWhileAnotherOneWorks) {
    OverviewModel m = quiet_with({beat("r1", "streaming", 2, true), beat("r2", "relaying", 300, false),
                                  beat("r3", "stopped", 300, false)});
    Attention a = overview_attention(m);
    EXPECT_FALSE(a.no_relay_alive_while_waiting);
    EXPECT_EQ(a.beat_red, (std::vector<bool>{false, true, false}));   // (r3 stopped cleanly: nothing to do)
    EXPECT_EQ(a.rows, 1);
}

TEST(OverviewHeartbeats, ARelayStoppedCleanlyIsRedWhenMessagesWaitForIt) {
    OverviewModel m = quiet_with({beat("r1", "stopped", 40, false)});
    m.relays.clear();
    m.topics[0].ready = "3";
    Attention a = overview_attention(m);
    EXPECT_TRUE(a.no_relay_while_ready);
    EXPECT_EQ(a.beat_red, std::vector<bool>{true});
    m.topics[0].ready = "0";
    EXPECT_EQ(overview_attention(m).beat_red, std::vector<bool>{false});   // nothing waits: a stop is no incident
}
