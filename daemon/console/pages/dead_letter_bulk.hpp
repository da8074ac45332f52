// Redrive or discard every dead letter a filter matches (topic, key prefix, error text, dead
// before): the filter page with how many match, the confirmation that says how many the action
// will touch, and the action. The confirmation carries a bound, the newest matching dead_at it
// counted, and the action takes the filter up to that bound only, so a message that dies
// between the confirmation and the click is not touched; the flash says how many were done.
#pragma once

#include "db.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace once::console {

constexpr int kMaxBulk = 10000;   // dead letters per action (as once.redrive / once.discard take)

struct BulkFilter {
    std::string topic, key_prefix, error;
    std::string until;   // dead before this time; a malformed one is dropped
    bool any() const { return !topic.empty() || !key_prefix.empty() || !error.empty() || !until.empty(); }
};

// A timestamp as the forms carry it: digits, '-', ':', ' ', 'T', '.', '+', at most 40 characters.
bool is_timestamp_text(const std::string& s);
// The filter from a query or form (the same field names); a malformed `until` is dropped.
BulkFilter bulk_filter(const std::map<std::string, std::vector<std::string>>& fields);

struct BulkCount {
    int matching = 0;                     // up to kMaxBulk + 1
    std::optional<std::string> newest;    // the newest matching dead_at: the action's bound
};

BulkCount count_bulk(Tx& tx, const BulkFilter& f);

struct BulkModel {
    BulkFilter filter;
    bool counted = false;   // the filter was submitted and counted
    BulkCount count;
    std::string op;         // the confirmation's: redrive | discard
    bool admin = false;
    std::string csrf;
};

std::string render_bulk_page(const BulkModel& m);      // GET /dead/bulk
std::string render_bulk_confirm(const BulkModel& m);   // POST /dead/bulk/confirm
// once.console_dead_letters_act: how many it changed.
std::string run_bulk_action(Tx& tx, const std::string& actor, const std::string& op, const BulkFilter& f,
                            const std::string& bound);

}  // namespace once::console
