#include "inbox.hpp"

#include "error.hpp"
#include "key_validation.hpp"
#include "topic.hpp"

#include <algorithm>

namespace once {
void validate_inbox_source(std::string_view source) {
    validate_name(ErrorCode::invalid_inbox_source, "inbox source", source);
}

void validate_message_id(std::string_view message_id) {
    validate_name(ErrorCode::invalid_message_id, "message id", message_id);
}

std::vector<Subscription> subscriptions_for(const std::vector<Subscription>& subscriptions,
                                            std::string_view topic) {
    std::vector<Subscription> chosen;
    for (const Subscription& s : subscriptions) {
        if (!topic_matches(s.pattern, topic)) continue;
        auto same_handler = [&](const Subscription& c) { return c.handler == s.handler; };
        if (std::none_of(chosen.begin(), chosen.end(), same_handler)) chosen.push_back(s);
    }
    return chosen;
}

}  // namespace once
