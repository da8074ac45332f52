// The retrying messages page: messages waiting for another attempt after a failed one (and
// those a relay holds again for it), in the order they come due, with their attempts, last
// error and next try; a topic filter and keyset paging.
#pragma once

#include "db.hpp"

#include <string>
#include <vector>

namespace once::console {

struct RetryingRow {
    std::string id, topic, key, attempt, last_error, next_try, relay, pos;
    bool in_flight = false;   // a relay holds it for its next attempt; next_try is its lease's end
};

struct RetryingModel {
    std::string topic;               // filter, "" = every topic
    std::vector<RetryingRow> rows;   // a page: kPage rows means there may be more
};

// `after`: the pos of the last row of the previous page, or "" (a malformed one is ignored).
RetryingModel load_retrying(Tx& tx, const std::string& topic, const std::string& after);
std::string render_retrying(const RetryingModel& m);

}  // namespace once::console
