// once-console's /metrics (docs/console.md, "Metrics"): the database's own view of the relays
// and the outbox, read from the database at each scrape, so it keeps working while no relay
// does (a relay's own /metrics goes away with it). The view model and its Prometheus text are
// pure (tests/unit/console/db_metrics_test.cpp); read_db_metrics runs the bounded reads.
#pragma once

#include "db.hpp"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace once::console {

struct RelayBeat {
    std::string relay, host, transport, state;
    double age_seconds = 0;
    bool alive = false;
    double messages_per_s = 0;
};

struct WalSlot {
    std::string slot;
    bool active = false;
    std::optional<int64_t> retained_bytes;   // none: invalidated
    std::optional<int64_t> safe_bytes;       // WAL that may still be written before the slot is lost; none: unbounded
};

struct TopicState {
    std::string topic;
    int64_t ready = 0, delayed = 0, in_flight = 0, blocked = 0, dead = 0;
    double oldest_ready_age = 0;   // seconds; 0 when nothing is ready
    int64_t retrying = 0;          // failed at least once, waiting for the next attempt
    double oldest_retrying_age = 0;
};

struct DbView {
    bool up = false;              // the read succeeded
    std::string database;
    std::vector<RelayBeat> relays;
    std::vector<WalSlot> slots;
    std::vector<TopicState> topics;
    int64_t blocked_keys = 0;             // keys held back by a dead head
    double oldest_blocked_key_age = 0;    // seconds since the oldest of those heads died
    double read_seconds = 0;
};

// Prometheus text of `v`. `seen_topics` are topics exported before: each is rendered with 0s
// when it has nothing now, so a topic's first dead letter is a step from 0, not a new series
// (the set is updated).
std::string render_db_metrics(const DbView& v, std::set<std::string>& seen_topics);
// The same for several databases (seen_topics[i] belongs to views[i]): each family once, with
// every database's samples, told apart by their `database` label.
std::string render_db_metrics(const std::vector<DbView>& views, std::vector<std::set<std::string>>& seen_topics);

// Reads the view in one read-only transaction as once_console_viewer. Throws DbError.
DbView read_db_metrics(const DbConfig& cfg);

}  // namespace once::console
