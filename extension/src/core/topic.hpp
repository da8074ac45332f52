// Topics and topic patterns, with NATS subject semantics so a pattern means the same thing in
// once.subscribe, once-relay --topics and a NATS consumer:
//   topic    tokens separated by '.', each of [A-Za-z0-9_-]+ ; at most 255 bytes
//   pattern  like a topic, but a token may be '*' (exactly one token) and the last token may
//            be '>' (one or more tokens). "order.*" matches "order.created", not
//            "order.created.v2"; "order.>" matches both, but not "order".
#pragma once

#include <string_view>

namespace once {

constexpr size_t kMaxTopicBytes = 255;

// Throw once::Error(ErrorCode::invalid_topic) naming the problem.
void validate_topic(std::string_view topic);
// Throw once::Error(ErrorCode::invalid_topic_pattern) naming the problem.
void validate_topic_pattern(std::string_view pattern);

// True when a (valid) pattern has no wildcard token: it matches exactly the topic it spells.
bool is_literal_pattern(std::string_view pattern);

// True when topic matches pattern (both assumed valid).
bool topic_matches(std::string_view pattern, std::string_view topic);

}  // namespace once
