// The blocked keys page: keys whose head message is dead or delayed, and what unblocks each.
#pragma once

#include "db.hpp"

#include <string>
#include <vector>

namespace once::console {

struct BlockedKeyRow {
    std::string key, topic;
    std::string reason;       // dead | delayed
    std::string head_id, head_error, held_until;
    std::string waiting;      // messages behind the head, capped
};

struct BlockedKeysModel {
    std::vector<BlockedKeyRow> rows;
    std::string csrf;
};

BlockedKeysModel load_blocked_keys(Tx& tx);
std::string render_blocked_keys(const BlockedKeysModel& m);

}  // namespace once::console
