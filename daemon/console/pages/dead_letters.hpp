// The dead letter pages: the filtered list, one message, and the confirmation of a redrive or
// discard.
#pragma once

#include "db.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace once::console {

constexpr std::size_t kMaxIds = 500;   // dead letters per action

struct DeadLetterFilter {
    std::string topic, key, error;
    std::string until;   // dead before this time; a malformed one is dropped
};

struct DeadLetterRow {
    std::string id, topic, key, attempt, dead_at, last_error;
};

struct DeadLetterListModel {
    DeadLetterFilter filter;
    std::vector<DeadLetterRow> rows;   // a page: kPage rows means there may be older ones
    std::string csrf;
};

// `before`: "dead_at|id" of the last row of the previous page, or "".
DeadLetterListModel load_dead_letter_list(Tx& tx, DeadLetterFilter filter, const std::string& before);
std::string render_dead_letter_list(const DeadLetterListModel& m);

struct DeadLetterModel {
    std::string id, topic, attempt, created_at, relay, last_error, payload_text;
    std::optional<std::string> key, dead_at, headers_text;   // none: NULL (a pending message has no dead_at)
    bool is_head = false;   // of its key
    std::string waiting;    // later messages of its key, capped
    std::string csrf;
};

// None: no such message.
std::optional<DeadLetterModel> load_dead_letter(Tx& tx, const std::string& id);
std::string render_dead_letter(const DeadLetterModel& m);

struct DeadLetterConfirmModel {
    std::string op;   // redrive | discard
    std::vector<std::string> ids;
    bool admin = false;
    std::string csrf;
};

// The form's message ids: well-formed ones only, at most kMaxIds.
std::vector<std::string> selected_dead_letters(const std::map<std::string, std::vector<std::string>>& form);
std::string render_dead_letter_confirm(const DeadLetterConfirmModel& m);

}  // namespace once::console
