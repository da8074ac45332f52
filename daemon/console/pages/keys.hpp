// The idempotency keys page: look up (scope, key) and see each owner's row, with a release
// form for a row in progress.
#pragma once

#include "db.hpp"

#include <optional>
#include <string>
#include <vector>

namespace once::console {

// One role's row of a key: a key's identity is (scope, key, owner).
struct KeyOwnerRow {
    std::string owner_id;                // the owner's oid in decimal; 0: stored by 0.1
    std::optional<std::string> owner;    // the role's name; none: no such role (any more)
    std::string state, attempt, recovery_point, locked_until, status, created_at, expires_at;
    bool expired = false;
    std::optional<std::string> response_bytes;   // none: no stored response
};

struct KeysModel {
    std::string scope, key;
    bool looked_up = false;   // a scope or key was given
    std::vector<KeyOwnerRow> owners;
    std::string csrf;
};

KeysModel load_keys(Tx& tx, const std::string& scope, const std::string& key);
// The form alone, before a lookup.
KeysModel keys_form(const std::string& scope, const std::string& key);
std::string render_keys(const KeysModel& m);

}  // namespace once::console
