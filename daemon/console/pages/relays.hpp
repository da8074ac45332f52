// The relays page: every relay's last heartbeat (once.console_relay_heartbeats, docs/relay.md
// "Heartbeats"): host, pid, transport, sink, state, last beat, messages/s. A relay that is not
// alive (stopped, silent for two of its intervals, or disconnected) is red; so is a database
// where no relay has ever beaten.
#pragma once

#include "db.hpp"

#include <string>
#include <vector>

namespace once::console {

struct RelayBeatRow {
    std::string relay, host, pid, transport, sink, state, state_since, last_beat, started_at, version;
    double age = 0;                // seconds since the last beat
    double beat_interval = 0;      // seconds
    double messages_per_s = 0;
    bool alive = false;
};

struct RelaysModel {
    std::vector<RelayBeatRow> rows;
};

RelaysModel load_relays(Tx& tx);
// The rows shown red: every relay that is not alive.
std::vector<bool> relays_red(const RelaysModel& m);
std::string render_relays(const RelaysModel& m);

}  // namespace once::console
