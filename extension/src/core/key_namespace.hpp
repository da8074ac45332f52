// Which stored row an idempotency key call uses. A key's identity is
// (scope, key, owner): each role has its own namespace, so a role that stores a key first
// cannot make the key unusable for another role. A caller uses, among the rows of (scope, key)
// that have not expired:
//   1. its own row (owner = the calling role);
//   2. else the row of a role whose privileges it has (a group role it inherits from, or any
//      role for a superuser): 0.2 shared keys that way, and dropping it would run a command
//      a second time after the update. Several such rows: ambiguous (the caller must SET ROLE);
//   3. else a row stored by 0.1 (no owner), shared until its bounded window ends;
//   4. else none: the caller's call stores a row in its own namespace.
// Kept apart from the PostgreSQL code so the rule is unit-tested on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace once {

// The owner of a key stored by 0.1 (PostgreSQL's InvalidOid): nobody.
constexpr uint32_t kNoKeyOwner = 0;

struct StoredKey {
    uint32_t owner;  // kNoKeyOwner: stored by 0.1
    bool expired;
};

struct KeyChoice {
    enum Kind { none, chosen, ambiguous } kind = none;
    size_t index = 0;  // into the rows passed, when chosen
};

// has_privileges_of(owner): whether the calling role has the privileges of owner.
KeyChoice choose_key(const std::vector<StoredKey>& rows, uint32_t caller,
                     const std::function<bool(uint32_t owner)>& has_privileges_of);

}  // namespace once
