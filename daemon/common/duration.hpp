// Durations with units for both daemons' options: "200ms", "30s", "5min", "1h", "1.5s".
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace once::relay {

using Millis = std::chrono::milliseconds;

// Parses "<number><unit>" with unit one of ms, s, min, h (also "sec", "m" is refused as
// ambiguous). A bare number is refused: the unit must be explicit. Throws std::invalid_argument
// with a message naming the value.
Millis parse_duration(std::string_view text);

// The shortest exact rendering: 1500ms -> "1500ms", 30000ms -> "30s", 300000ms -> "5min".
std::string format_duration(Millis d);

// PostgreSQL interval literal for a duration: "1500 milliseconds".
std::string pg_interval(Millis d);

}  // namespace once::relay
