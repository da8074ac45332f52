// The HTTP answer to a webhook once the inbox has settled it (the PostgreSQL sink's outcome
// of once.deliver, sinks/postgres_sink). Sent only after the transaction has committed or
// rolled back:
//   - processed, duplicate   -> 200: the sender stops; a duplicate is answered as the first was;
//   - poison                 -> 422: the inbox keeps the message as poison without running it
//                               again, so a retry cannot help; a 4xx makes the sender stop and
//                               keep the message among its failed deliveries, from where it is
//                               sent again once a person has fixed the cause and called
//                               once.inbox_retry (a 2xx would tell the sender it was handled);
//   - anything else (a handler failed, no handler subscribed, the database unreachable or too
//     slow) -> 503 with Retry-After: nothing was recorded, the sender tries again later.
// The body says which, in a few words; a handler's error stays in the relay's log (its text
// and SQL are none of the sender's business).
#pragma once

#include "message.hpp"

#include <string>

namespace once::relay {

struct InboundAnswer {
    int status = 500;
    std::string body;        // JSON text
    int retry_after_s = 0;   // > 0: a Retry-After header
};

InboundAnswer answer_for(const Outcome& outcome);

// A refusal before delivery (signature, request shape, limits): {"error": reason}.
InboundAnswer refusal(int status, const std::string& reason, int retry_after_s = 0);

}  // namespace once::relay
