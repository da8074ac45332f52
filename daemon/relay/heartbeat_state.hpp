// What a relay's heartbeat says about it (once.relay_heartbeat's state and messages/s), from
// the loop's counters: pure, so the rules are unit-tested (tests/unit/daemon/heartbeat_state_test.cpp).
#pragma once

#include <cstdint>
#include <string>

namespace once::relay {

// The counters a beat is made of, read at one moment.
struct HeartbeatInputs {
    bool db_up = false;               // the loop's own database connection (not the beat's)
    bool sink_up = false;
    int64_t wal_stream_active = -1;   // Metrics::wal_stream_active: 1 streams, 0 stands by, -1 table transport
    bool stopping = false;            // the relay's last beat, at a clean stop
};

// 'stopped', 'connecting' (the loop has no database connection yet, or lost it), 'sink down',
// 'streaming', 'standing by' or 'relaying' (the states once.relay_heartbeat accepts).
std::string heartbeat_state(const HeartbeatInputs& in);

// Acknowledged messages per second between two beats (0 when no time passed or the counter
// went back).
double messages_per_second(uint64_t acked_before, uint64_t acked_now, double seconds);

}  // namespace once::relay
