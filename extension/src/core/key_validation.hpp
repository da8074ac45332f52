// The one rule for the short names callers pass in: idempotency keys and scopes, message keys,
// relay names, inbox sources and message ids. Every such name behaves the same way; only the
// SQLSTATE (which argument was wrong) and the word in the message differ.
#pragma once

#include "error.hpp"

#include <string_view>

namespace once {

// Longest name in bytes (the limit Stripe and the IETF draft use for idempotency keys).
constexpr size_t kMaxKeyBytes = 255;

// Throws once::Error(code) naming `what` (e.g. "idempotency key") when value is empty, longer
// than kMaxKeyBytes bytes, or contains an ASCII control character (they break logs and HTTP
// headers, where names travel).
void validate_name(ErrorCode code, std::string_view what, std::string_view value);

// validate_name with invalid_key (ON1xx: idempotency keys and scopes).
inline void validate_key(std::string_view what, std::string_view value) {
    validate_name(ErrorCode::invalid_key, what, value);
}

}  // namespace once
