// The message lookup page: one message id wherever pg_once has it (the outbox with its state,
// dead letters included; the delivered history; the inbox, processed or poison; the inbox's
// failures), or the truthful "not there" when it has none of them.
#pragma once

#include "db.hpp"

#include <optional>
#include <string>
#include <vector>

namespace once::console {

struct FoundRow {
    std::string place;   // outbox, delivered, inbox, inbox failures
    std::string state;   // outbox: ready, delayed, retrying, claimed, waiting behind its key, fenced, dead
    std::string source, topic, key, attempt, last_error, at;
};

struct FindModel {
    std::string id;
    bool looked_up = false;
    std::vector<FoundRow> rows;
};

FindModel find_form(const std::string& id);
FindModel load_find(Tx& tx, const std::string& id);
// What the time of a row is: "dead since", "next try", "delivered", "received", "last failed"...
std::string found_time_label(const FoundRow& r);
std::string render_find(const FindModel& m);

}  // namespace once::console
