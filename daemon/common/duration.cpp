#include "duration.hpp"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace once::relay {

Millis parse_duration(std::string_view text) {
    auto fail = [&](const std::string& why) {
        return std::invalid_argument("invalid duration \"" + std::string(text) + "\": " + why +
                                     " (use a number and a unit: 200ms, 30s, 5min, 1h)");
    };
    size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == 0) throw fail("it does not start with a number");
    std::string number(text.substr(0, i));
    std::string_view unit = text.substr(i);
    while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
    char* end = nullptr;
    double value = std::strtod(number.c_str(), &end);
    if (end == number.c_str() || *end != '\0' || !std::isfinite(value)) throw fail("bad number");
    double factor;
    if (unit == "ms") factor = 1;
    else if (unit == "s" || unit == "sec") factor = 1000;
    else if (unit == "min") factor = 60000;
    else if (unit == "h") factor = 3600000;
    else if (unit.empty()) throw fail("the unit is missing");
    else throw fail("unknown unit \"" + std::string(unit) + "\"");
    double ms = value * factor;
    if (ms > 1e12) throw fail("too large");
    if (ms != std::floor(ms)) throw fail("finer than a millisecond");
    return Millis(static_cast<int64_t>(ms));
}

std::string format_duration(Millis d) {
    int64_t ms = d.count();
    if (ms != 0 && ms % 3600000 == 0) return std::to_string(ms / 3600000) + "h";
    if (ms != 0 && ms % 60000 == 0) return std::to_string(ms / 60000) + "min";
    if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
    return std::to_string(ms) + "ms";
}

std::string pg_interval(Millis d) { return std::to_string(d.count()) + " milliseconds"; }

}  // namespace once::relay
