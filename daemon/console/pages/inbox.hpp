// The inbox page: poison messages (each with a retry form) and the subscriptions, a
// subscription whose handler was dropped marked.
#pragma once

#include "db.hpp"

#include <string>
#include <vector>

namespace once::console {

struct PoisonRow {
    std::string source, message_id, topic, attempts, first_failed_at, last_failed_at, last_error;
    bool has_copy = false;   // the inbox kept the message: Retry runs its handlers now
};

struct SubscriptionRow {
    std::string topic_pattern, handler, subscribed_at;
    bool handler_exists = true;
};

struct InboxModel {
    std::vector<PoisonRow> poison;   // a page: kPage rows means there may be more
    std::vector<SubscriptionRow> subscriptions;
    std::string csrf;
};

// `after`: "source|message_id" of the last row of the previous page, or "".
InboxModel load_inbox(Tx& tx, const std::string& after);
std::string render_inbox(const InboxModel& m);

}  // namespace once::console
