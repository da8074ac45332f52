// Errors raised by pure pg_once logic. The PostgreSQL boundary maps each code to its own
// SQLSTATE (extension/src/pg/sqlstate.cpp), so core code never needs a PostgreSQL header.
#pragma once

#include <stdexcept>
#include <string>

namespace once {

enum class ErrorCode {
    invalid_argument,      // a bad value passed to a pg_once function (400)
    invalid_key,           // missing, empty or oversized idempotency key or scope (400)
    request_mismatch,      // same idempotency key, another request (422)
    key_busy,              // another caller holds the key's lease (409)
    key_not_held,          // checkpoint/complete/release of a key the caller does not hold (409)
    invalid_command_result,// once.run's command did not return exactly one value (500)
    invalid_json,          // text that is not JSON where JSON is required
    invalid_topic,         // empty, oversized or badly formed topic (400)
    invalid_topic_pattern, // badly formed subscription / relay topic pattern (400)
    invalid_inbox_source,  // missing, empty or oversized inbox source (400)
    invalid_message_id,    // missing, empty or oversized inbox message id (400)
    invalid_handler,       // inbox handler missing or with the wrong signature (400)
    handler_unavailable,   // a subscribed inbox handler no longer exists (500)
    internal,              // a bug: an invariant did not hold
};

class Error : public std::runtime_error {
public:
    Error(ErrorCode code, std::string message, std::string detail = {}, std::string hint = {})
        : std::runtime_error(std::move(message)), code_(code),
          detail_(std::move(detail)), hint_(std::move(hint)) {}

    ErrorCode code() const noexcept { return code_; }
    const std::string& detail() const noexcept { return detail_; }
    const std::string& hint() const noexcept { return hint_; }

private:
    ErrorCode code_;
    std::string detail_;
    std::string hint_;
};

}  // namespace once
