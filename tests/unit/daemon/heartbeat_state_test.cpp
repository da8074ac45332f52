#include "heartbeat_state.hpp"

#include <gtest/gtest.h>

using namespace once::relay;

namespace {
HeartbeatInputs in(bool sink_up, int64_t wal_stream_active, bool stopping = false, bool db_up = true) {
    HeartbeatInputs i;
    i.db_up = db_up;
    i.sink_up = sink_up;
    i.wal_stream_active = wal_stream_active;
    i.stopping = stopping;
    return i;
}
}  // namespace

TEST(HeartbeatState, StoppingWinsOverEverything) { EXPECT_EQ(heartbeat_state(in(false, 1, true)), "stopped"); }

// (at start the writer may beat before the loop has connected and looked at its sink)
TEST(HeartbeatState, ConnectingBeforeTheSink) {
    EXPECT_EQ(heartbeat_state(in(false, -1, false, false)), "connecting");
    EXPECT_EQ(heartbeat_state(in(true, 1, false, false)), "connecting");
    EXPECT_EQ(heartbeat_state(in(false, 1, true, false)), "stopped");
}

TEST(HeartbeatState, SinkDownBeforeTheTransport) {
    EXPECT_EQ(heartbeat_state(in(false, 1)), "sink down");
    EXPECT_EQ(heartbeat_state(in(false, -1)), "sink down");
}

TEST(HeartbeatState, TransportStates) {
    EXPECT_EQ(heartbeat_state(in(true, 1)), "streaming");
    EXPECT_EQ(heartbeat_state(in(true, 0)), "standing by");
    EXPECT_EQ(heartbeat_state(in(true, -1)), "relaying");
}

TEST(HeartbeatState, MessagesPerSecond) {
    EXPECT_DOUBLE_EQ(messages_per_second(100, 150, 10), 5);
    EXPECT_DOUBLE_EQ(messages_per_second(100, 100, 10), 0);
    EXPECT_DOUBLE_EQ(messages_per_second(100, 150, 0), 0);
    EXPECT_DOUBLE_EQ(messages_per_second(150, 100, 10), 0);   // (a counter never goes back; no negative rate)
}
