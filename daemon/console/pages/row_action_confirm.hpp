// The confirmation of an action on one row: an inbox message's retry (op inbox_retry, a =
// source, b = message id) or the release of one owner's row of a key (op key_release, a =
// scope, b = key, owner = the owner's oid).
#pragma once

#include "db.hpp"

#include <string>

namespace once::console {

struct RowActionConfirmModel {
    std::string op, a, b, owner;
    std::string owner_name;   // the role's name when it still exists, else the oid
    bool admin = false;
    std::string csrf;
};

// Whether the form names a known op with both parts (and, for a release, an owner oid).
bool valid_row_action(const std::string& op, const std::string& a, const std::string& b);
// The owner of a key's row, as once.keys.owner: an oid in decimal (0: a key stored by 0.1).
bool is_owner_oid(const std::string& s);
// The role's name of a key row's owner, or `owner` itself when the role is gone.
std::string load_key_owner_name(Tx& tx, const std::string& scope, const std::string& key, const std::string& owner);
std::string render_row_action_confirm(const RowActionConfirmModel& m);
// The page the action belongs to (the navigation entry, Cancel's target).
std::string row_action_home(const std::string& op);

}  // namespace once::console
