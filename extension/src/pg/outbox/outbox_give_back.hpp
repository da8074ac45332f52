// How a message that a relay failed to deliver comes back to the outbox: retried after the
// topic's backoff, or dead. once.nack / once.dead (outbox_settle.cpp) and
// once.wal_write_back (outbox_wal_write_back.cpp, a message of the WAL transport's stream)
// decide it the same way.
#pragma once

#include "core/outbox_policy.hpp"
#include "pg/common/postgres_headers.hpp"
#include "pg/outbox/outbox_row.hpp"

#include <optional>

namespace once::pg {

// The retry policy of a topic (the defaults where it has none). Call inside an SPI session, as
// the extension's owner.
RetryPolicy topic_policy(Datum topic);

struct GiveBack {
    bool dead;
    TimestampTz visible_at;  // retry: when it is due again
    Uuid pos;                // retry: its claim position then
};

// A message delivered `attempt` times that failed again: dead when `permanent` (the sink
// refused it for good) or the policy's attempts are used up, else due after retry_after or
// the policy's backoff.
GiveBack decide_give_back(const RetryPolicy& policy, int attempt, bool permanent,
                          std::optional<int64_t> retry_after);

// The row of a message given back as `g` decided, after `attempt` deliveries (error 0: none):
// a retry due at g.visible_at in claim position g.pos, or a dead letter as
// outbox_sql::dead_letter_assignments makes one (dead_at the transaction's start, visible_at
// infinity, the dead position). The caller sets the message's own fields.
OutboxRow given_back_row(Datum id, Datum created_at, int32 attempt, const GiveBack& g, Datum error);

}  // namespace once::pg
