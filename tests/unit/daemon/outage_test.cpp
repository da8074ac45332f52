#include "outage.hpp"
#include "outbox/gauge_reader.hpp"

#include <gtest/gtest.h>

using namespace once::relay;
using namespace std::chrono_literals;

// One line when an outage starts, one when it ends; failures in between are only counted.
TEST(Outage, StartsOnceEndsOnce) {
    Outage o;
    auto t0 = Outage::Clock::time_point{} + 100s;
    EXPECT_FALSE(o.up(t0).has_value());   // not down: nothing to tell
    o.count();                            // not down: not counted
    EXPECT_TRUE(o.down(t0, "connection refused"));
    EXPECT_FALSE(o.down(t0 + 1s, "timeout"));   // the same outage
    EXPECT_TRUE(o.active());
    EXPECT_EQ(o.reason(), "connection refused");   // the reason it started with
    o.count();
    o.count();
    EXPECT_EQ(o.failures(), 2u);
    auto lasted = o.up(t0 + 12300ms);
    ASSERT_TRUE(lasted.has_value());
    EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(*lasted).count(), 12300);
    EXPECT_FALSE(o.active());
    EXPECT_FALSE(o.up(t0 + 13s).has_value());
    EXPECT_TRUE(o.down(t0 + 20s, "again"));   // a new outage
    EXPECT_EQ(o.failures(), 0u);
}

TEST(Outage, EndText) {
    EXPECT_EQ(outage_end_text(12345ms, "nats sink not connected", 57, WaitingCount{1234, false}),
              "after 12.3 s (down since: nats sink not connected); 57 attempt(s) failed meanwhile; 1234 message(s) "
              "waiting in the outbox");
    EXPECT_EQ(outage_end_text(2s, "x", 0, WaitingCount{10000, true}),
              "after 2.0 s (down since: x); 0 attempt(s) failed meanwhile; at least 10000 message(s) waiting in the outbox");
    EXPECT_EQ(outage_end_text(2s, "x", 1, std::nullopt), "after 2.0 s (down since: x); 1 attempt(s) failed meanwhile");
}

TEST(Outage, EndTextOnTheWalTransportNamesTheSlot) {
    EXPECT_EQ(outage_end_text(2s, "x", 1, WaitingCount{0, false, "once_relay", 52428800}),
              "after 2.0 s (down since: x); 1 attempt(s) failed meanwhile; 52428800 byte(s) of WAL waiting in slot once_relay");
    EXPECT_EQ(outage_end_text(2s, "x", 1, WaitingCount{3, false, "once_relay", 100}),
              "after 2.0 s (down since: x); 1 attempt(s) failed meanwhile; 100 byte(s) of WAL waiting in slot once_relay; "
              "3 message(s) in the outbox table");
    EXPECT_EQ(outage_end_text(2s, "x", 1, WaitingCount{0, false, "s1", -1}),
              "after 2.0 s (down since: x); 1 attempt(s) failed meanwhile; the messages sent meanwhile wait in slot s1");
}

// The outbox gauges are read every 15 s, or less often when a read is slow (at most 5 %).
TEST(GaugeReader, SlowReadsAreSpacedOut) {
    EXPECT_EQ(next_gauge_read_in(20ms), std::chrono::milliseconds(15000));
    EXPECT_EQ(next_gauge_read_in(2000ms), std::chrono::milliseconds(40000));
}
