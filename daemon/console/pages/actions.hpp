// The actions page: the audit log of what console users did, newest first.
#pragma once

#include "db.hpp"

#include <string>
#include <vector>

namespace once::console {

struct ActionRow {
    std::string id, at, actor, db_role, action, ids, affected, result;
};

struct ActionsModel {
    std::vector<ActionRow> rows;   // a page: kPage rows means there may be older ones
};

// `before`: the id of the last row of the previous page, or "" (a malformed one is ignored).
ActionsModel load_actions(Tx& tx, std::string before);
std::string render_actions(const ActionsModel& m);

}  // namespace once::console
