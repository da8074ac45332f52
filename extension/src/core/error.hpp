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
    key_ambiguous,     // idempotency key stored by several roles whose privileges the caller has (409)
    invalid_json,          // text that is not JSON where JSON is required
    invalid_topic,         // empty, oversized or badly formed topic (400)
    invalid_topic_pattern, // badly formed subscription / relay topic pattern (400)
    payload_too_large,     // outbox payload above once.max_payload_bytes (413)
    invalid_payload,       // outbox payload NULL or JSON null (400)
    invalid_headers,       // outbox headers not a JSON object (400)
    invalid_message_key,   // outbox ordering key empty, too long or with control characters (400)
    invalid_batch,         // claim batch / send_many size out of range, or arrays of different length (400)
    message_id_conflict,   // an explicit message_id already used for a different message (409)
    message_not_found,     // nack of a message id that is not in the outbox (404)
    claim_unsettled,       // commit with claim_locked messages neither acked nor given back (500)
    reserved_header,       // a message header the relay may not send (transport/relay name, bad value) (400)
    publish_denied,        // publishing grants exist and none lets the caller publish on the topic (403)
    key_held_by_prepared,  // settling would wait for a prepared transaction that holds the key's lock (409)
    invalid_trace_context, // a traceparent / tracestate header that is not W3C trace context (400)
    invalid_relay,         // relay name NULL, empty, too long or with control characters (400)
    invalid_interval,      // lease / retry_after NULL or out of range, deliver_at infinite (400)
    invalid_policy,        // topic policy values out of range (400)
    invalid_message_ids,   // ids array NULL, empty, too long or with NULL elements (400)
    invalid_inbox_source,  // missing, empty or oversized inbox source (400)
    invalid_message_id,    // missing, empty or oversized inbox message id (400)
    invalid_handler,       // inbox handler missing or with the wrong signature (400)
    handler_unavailable,   // a subscribed inbox handler no longer exists (500)
    untrusted_function,    // a handler / local step owned by a role that could rewrite it to act as its run_as role (403)
    saga_invalid_definition, // saga definition fails validation (400)
    saga_not_found,          // unknown saga id or saga definition name (404)
    saga_unknown_step,       // a step name the saga's definition lacks (422)
    saga_input_mismatch,     // saga_start with a known saga id and another input/name (409)
    saga_invalid_state,      // saga_retry of a saga that is not failed, abort of a finished one (409)
    saga_invalid_reply,      // bad outcome or malformed reply message (400)
    saga_start_denied,       // saga_start of a definition with start grants, none of them the caller's (403)
    saga_ambiguous,          // a saga id without a definition name that sagas of several definitions have (409)
    sql_version_mismatch,  // the loaded library and the database's pg_once SQL differ (503)
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
