#include "prometheus_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>

namespace once::relay {

std::string format_metric_value(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    char buf[64];
    // Integers below 2^53 are exact in a double: print every digit, no exponent.
    if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {
        auto r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v));
        return std::string(buf, r.ptr);
    }
    // The shortest form that reads back as v; without an exponent in the usual range, so a
    // histogram bound stays le="0.0005" (not "5e-04") as in 0.2.
    double a = std::fabs(v);
    auto r = a >= 1e-4 && a < 1e15 ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed)
                                   : std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string escape_label_value(const std::string& v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

}  // namespace once::relay
