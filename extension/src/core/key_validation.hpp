// Validation of the short names callers pass in: idempotency keys, scopes, and later topics,
// sources and saga ids. Rules are shared so every pg_once identifier behaves the same way.
#pragma once

#include <string_view>

namespace once {

// Longest idempotency key or scope, in bytes (the limit Stripe and the IETF draft use).
constexpr size_t kMaxKeyBytes = 255;

// Throws once::Error(ErrorCode::invalid_key) naming `what` (e.g. "idempotency key") when
// value is empty, longer than kMaxKeyBytes bytes, or contains an ASCII control character
// (they break logs and HTTP headers, where keys travel).
void validate_key(std::string_view what, std::string_view value);

}  // namespace once
