// Verification of Standard Webhooks requests (https://www.standardwebhooks.com), the receiving
// side of sinks/webhook_signature: webhook-id, webhook-timestamp (unix seconds) and
// webhook-signature, a space-separated list of "v1,<base64 HMAC-SHA256 of
// "<id>.<timestamp>.<body>">". A request verifies when one of its v1 signatures matches one of
// the configured secrets (several secrets: a rotation), compared in constant time, and its
// timestamp lies within the tolerance of now, in either direction (a captured request cannot
// be replayed later, a clock far ahead cannot sign requests for the future). Signatures of
// other versions (v1a, asymmetric) are ignored. Pure: the clock is an argument.
#pragma once

#include "sinks/webhook_signature.hpp"

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

namespace once::relay {

enum class WebhookCheck {
    verified,
    missing_headers,     // webhook-id, webhook-timestamp or webhook-signature absent or empty
    bad_timestamp,       // not a plain decimal number of seconds
    timestamp_too_old,   // older than now - tolerance
    timestamp_too_new,   // later than now + tolerance
    no_matching_signature,
};

// A short English description, the same for every request with this result. It never holds
// a signature or a secret (it is logged and sent back in the answer's body).
const char* describe(WebhookCheck check);

WebhookCheck verify_webhook(const std::vector<WebhookKey>& keys, std::string_view id, std::string_view timestamp,
                            std::string_view signatures, std::string_view body, int64_t now_unix_seconds,
                            std::chrono::seconds tolerance);

}  // namespace once::relay
