// The producer's headers of a message as both transport sinks (HTTP, NATS) send them: parsed
// from the message's JSON, filtered by the shared rule (core/message_headers.hpp), and each
// refused header logged once as a warning naming the message id and the header name (never
// its value, which may be a secret). A refused header is dropped; the message still goes.
#pragma once

#include "message.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace once::relay {

std::vector<std::pair<std::string, std::string>> producer_headers(const Message& m);

// A header name as it may appear in a log line: control characters, quotes, backslashes and
// bytes >= 0x7f as \xNN, cut after 64 bytes. A refused name is attacker-written text.
std::string loggable_header_name(std::string_view name);

}  // namespace once::relay
