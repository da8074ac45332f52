// A claimed outbox message as the relay sees it (once.message, JSON columns kept as text).
#pragma once

#include "duration.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace once::relay {

struct Message {
    std::string id;          // uuid text
    std::string topic;
    std::string key;         // empty when has_key is false
    bool has_key = false;
    std::string payload;     // JSON text
    std::string headers;     // JSON object text, or empty when NULL
    int attempt = 0;
    std::string created_at;  // timestamptz text as PostgreSQL prints it
    std::string content_type;  // the payload's media type, or empty when NULL (application/json):
                               // what a sink sends is core/content_type.hpp's delivered_body
};

enum class Verdict {
    delivered,   // the sink has it: ack
    retry,       // transient failure: nack, the outbox retries with backoff (or retry_after)
    dead,        // the sink refuses it for good: dead-letter it
};

struct Outcome {
    uint64_t token = 0;                 // as passed to Sink::submit
    Verdict verdict = Verdict::retry;
    std::string error;                  // why, for retry and dead (never the payload)
    std::optional<Millis> retry_after;  // the sink asked to wait this long (Retry-After)
    bool duplicate = false;             // delivered: the receiver had it already (the inbox's 'duplicate')
};

}  // namespace once::relay
