// The overview page: rates, the outbox per topic, the WAL transport's slots, connected relays,
// the relays' heartbeats and saga counts, with the rows that need attention marked.
#pragma once

#include "db.hpp"
#include "pages/relays.hpp"
#include "pages/wal_slots.hpp"
#include "rates.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace once::console {

struct TopicRow {
    std::string topic, ready, delayed, in_flight, blocked, dead;   // counts as text, capped
    std::optional<double> age;   // seconds the oldest ready message waits; none when none is ready
};

struct RelayRow {
    std::string relay, connections, client, connected_since;
    double idle = 0;   // seconds since its last activity
};

struct OverviewModel {
    Rates rates;
    long long rate_interval_s = 0;   // seconds per bar
    std::size_t rate_intervals = 0;  // bars at most
    std::vector<TopicRow> topics;
    std::vector<RelayRow> relays;
    std::map<std::string, std::string> saga_counts;   // status -> count as text
    std::vector<RelayBeatRow> beats;      // once.console_relay_heartbeats
    std::vector<std::string> idle_slots;  // logical slots nobody streams (the WAL transport's messages wait there)
    WalModel wal;   // once.transport and the logical slots: where the WAL transport's backlog waits
};

// What needs attention, row by row: the overview's rules.
struct Attention {
    std::vector<std::string> topic_reasons;   // per topic: "" or why ("dead letters; blocked keys")
    std::vector<bool> relay_stalled;          // per relay: no activity for over two minutes
    bool no_relay_while_ready = false;        // no relay connected while messages are ready
    std::vector<bool> beat_red;               // per heartbeat: not alive, and it did not stop cleanly or
                                              // no relay is alive while messages wait (either row below)
    bool no_relay_alive_while_waiting = false;   // no relay alive while messages are ready or a slot is not streamed
    bool failed_sagas = false;
    std::vector<std::string> wal_slot_reasons;   // per slot: "" or why (wal_slot_attention)
    int rows = 0;                             // rows marked
};

// Runs the overview's queries; the rates are the caller's.
OverviewModel load_overview(Tx& tx);
Attention overview_attention(const OverviewModel& m);
std::string render_overview(const OverviewModel& m, const Attention& a);

}  // namespace once::console
