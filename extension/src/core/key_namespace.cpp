#include "key_namespace.hpp"

namespace once {

KeyChoice choose_key(const std::vector<StoredKey>& rows, uint32_t caller,
                     const std::function<bool(uint32_t owner)>& has_privileges_of) {
    KeyChoice inherited, ownerless;
    for (size_t i = 0; i < rows.size(); ++i) {
        const StoredKey& row = rows[i];
        if (row.expired) continue;  // an expired row is absent
        if (row.owner == caller) return {KeyChoice::chosen, i};
        if (row.owner == kNoKeyOwner) {
            ownerless = {KeyChoice::chosen, i};
        } else if (inherited.kind != KeyChoice::ambiguous && has_privileges_of(row.owner)) {
            inherited = inherited.kind == KeyChoice::none ? KeyChoice{KeyChoice::chosen, i}
                                                          : KeyChoice{KeyChoice::ambiguous, 0};
        }
    }
    return inherited.kind != KeyChoice::none ? inherited : ownerless;
}

}  // namespace once
