// Inbox logic that needs no server: validation of sources and message ids, and the choice of
// handlers for a topic from the subscription list.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace once {

// Same rules as idempotency keys (1..255 bytes, no control characters), reported with the
// inbox's own error codes: invalid_inbox_source (ON302) and invalid_message_id (ON303).
void validate_inbox_source(std::string_view source);
void validate_message_id(std::string_view message_id);

struct Subscription {
    std::string pattern;   // a valid topic pattern (validate_topic_pattern)
    uint32_t handler = 0;  // the handler function's oid
    uint32_t run_as = 0;   // the role it runs as (0: its owner; pg/common/run_as.hpp)
};

// The subscriptions to run for `topic`, in subscription order. A handler subscribed through
// several matching patterns runs once: its first matching subscription decides its position
// and its run_as role.
std::vector<Subscription> subscriptions_for(const std::vector<Subscription>& subscriptions,
                                            std::string_view topic);

}  // namespace once
