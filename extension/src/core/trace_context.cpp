#include "trace_context.hpp"

#include <algorithm>

namespace once {
namespace {

bool lower_hex(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool all_zero(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

std::optional<TraceParent> invalid(std::string* why, const char* reason) {
    if (why) *why = reason;
    return std::nullopt;
}

}  // namespace

std::optional<TraceParent> parse_traceparent(std::string_view v, std::string* why) {
    constexpr size_t kLength = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2
    if (v.size() < kLength) return invalid(why, "a traceparent has 55 characters: 00-<32 hex>-<16 hex>-<2 hex>");
    if (v[2] != '-' || v[35] != '-' || v[52] != '-') return invalid(why, "its fields are separated by '-' at 3, 36 and 53");
    TraceParent t{std::string(v.substr(0, 2)), std::string(v.substr(3, 32)), std::string(v.substr(36, 16)),
                  std::string(v.substr(53, 2))};
    if (!lower_hex(t.version) || !lower_hex(t.trace_id) || !lower_hex(t.parent_id) || !lower_hex(t.flags))
        return invalid(why, "its fields are lowercase hexadecimal");
    if (t.version == "ff") return invalid(why, "version ff is invalid");
    if (t.version == "00" && v.size() != kLength) return invalid(why, "a version 00 traceparent has exactly 55 characters");
    if (v.size() > kLength && v[kLength] != '-') return invalid(why, "a later version continues with '-' after 55 characters");
    if (all_zero(t.trace_id)) return invalid(why, "the trace id must not be all zeros");
    if (all_zero(t.parent_id)) return invalid(why, "the parent id must not be all zeros");
    return t;
}

bool valid_tracestate(std::string_view v, std::string* why) {
    if (v.size() > 512) {
        if (why) *why = "a tracestate has at most 512 characters";
        return false;
    }
    for (char c : v) {
        if (c < 0x20 || c > 0x7e) {
            if (why) *why = "a tracestate holds printable ASCII only";
            return false;
        }
    }
    return true;
}

std::string child_traceparent(const TraceParent& parent, std::array<uint8_t, 8> span_id) {
    if (std::all_of(span_id.begin(), span_id.end(), [](uint8_t b) { return b == 0; })) span_id[7] = 1;
    static const char* hex = "0123456789abcdef";
    std::string span;
    for (uint8_t b : span_id) {
        span.push_back(hex[b >> 4]);
        span.push_back(hex[b & 15]);
    }
    return "00-" + parent.trace_id + "-" + span + "-" + parent.flags;
}

}  // namespace once
