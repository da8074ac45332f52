// What an admin's confirmed action runs in the database: redrive or discard dead letters,
// retry or abort a saga, retry an inbox message or release one owner's row of a key. Each is
// one once.console_* function, which also writes the audit row; the caller commits.
#pragma once

#include "db.hpp"

#include <optional>
#include <string>
#include <vector>

namespace once::console {

// {id,id,...}: a uuid[] literal of ids already checked to be uuids.
std::string uuid_array_literal(const std::vector<std::string>& ids);
// op: redrive | discard. The number of dead letters it applied to, as text.
std::string run_dead_letter_action(Tx& tx, const std::string& user, const std::string& op, const std::vector<std::string>& ids);
// op: retry | abort (with an optional reason). The saga's status afterwards.
std::string run_saga_action(Tx& tx, const std::string& user, const std::string& op, const std::string& name,
                            const std::string& id, const std::optional<std::string>& reason);
// op: inbox_retry (a = source, b = message id) | key_release (a = scope, b = key, owner).
// "t" when there was something to do, as the function answers.
std::string run_row_action(Tx& tx, const std::string& user, const std::string& op, const std::string& a, const std::string& b,
                    const std::string& owner);

}  // namespace once::console
