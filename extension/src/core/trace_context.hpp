// W3C Trace Context (https://www.w3.org/TR/trace-context/), as OpenTelemetry propagates it:
// the `traceparent` and `tracestate` values pg_once carries from a producer's transaction to
// its messages, from a delivered message to its handlers, and from a saga's start to each of
// its step commands. Pure rules, no server: unit-tested in tests/unit/core.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace once {

struct TraceParent {
    std::string version;    // 2 lowercase hex digits, not "ff"
    std::string trace_id;   // 32 lowercase hex digits, not all zero
    std::string parent_id;  // 16 lowercase hex digits, not all zero
    std::string flags;      // 2 lowercase hex digits
};

// The parsed value, or nullopt with `why` set when it is not a valid traceparent: version 00
// exactly "00-<trace-id>-<parent-id>-<flags>"; a later version may append "-..." after those
// (the specification's forward compatibility), which a child drops.
std::optional<TraceParent> parse_traceparent(std::string_view value, std::string* why = nullptr);

// Whether `value` may be sent as tracestate: at most 512 characters of printable ASCII (the
// list members' characters), or empty. Members are not parsed: pg_once passes it on unchanged.
bool valid_tracestate(std::string_view value, std::string* why = nullptr);

// The traceparent of a new span under `parent` (a valid traceparent): same version 00, trace
// id and flags, `span_id` as parent id (8 random bytes from the caller; all zero is replaced
// by 1, which the specification forbids).
std::string child_traceparent(const TraceParent& parent, std::array<uint8_t, 8> span_id);

}  // namespace once
