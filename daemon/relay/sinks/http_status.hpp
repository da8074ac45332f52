// How the HTTP sink reads an answer: pure functions, unit-tested.
#pragma once

#include "message.hpp"

#include <ctime>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace once::relay {

// 2xx delivered; 408, 425, 429 and 5xx retry; any other status dead (permanent).
Verdict classify_http_status(long status);

// Retry-After as delta-seconds ("120") or an HTTP-date relative to `now`. Nothing when
// absent or unreadable; never negative; capped at one day.
std::optional<Millis> parse_retry_after(const std::string& value, std::time_t now);

// The message's headers (a JSON object, read with core/json like every JSON in pg_once) as
// HTTP header lines "Name: value". String values are used as they are, numbers as written,
// other JSON values as their compact JSON text; names that are not HTTP tokens
// and values with CR/LF are skipped (reported in `skipped`). Throws std::invalid_argument
// when the text is not a JSON object.
std::vector<std::pair<std::string, std::string>> message_headers(const std::string& json_object,
                                                                 std::vector<std::string>* skipped = nullptr);

// First `max` bytes of a response body, on one line, for an error message.
std::string body_excerpt(const std::string& body, size_t max = 200);

}  // namespace once::relay
