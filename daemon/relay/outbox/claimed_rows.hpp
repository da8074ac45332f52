// The outbox's claimed rows as the relay reads them. Both claim functions (once.claim for
// leased claims, once.claim_locked for locked lanes) answer with the same select list, and
// one decoder turns their rows into Messages by column NAME: adding a field to messages
// means adding it here, to the select list and to Message, nowhere else in the relay.
#pragma once

#include "message.hpp"

#include <vector>

typedef struct pg_result PGresult;

namespace once::relay {

// The select list of every claim statement (outbox/statements.cpp), with the names the
// decoder looks for.
extern const char* const kClaimedColumns;

// The rows of a claim's answer as Messages, in the order the outbox returned them. Throws
// std::runtime_error naming a column the answer lacks (a statement and this decoder out of
// step: a bug, never a reason to guess by position).
std::vector<Message> decode_claimed_rows(const PGresult* rows);

}  // namespace once::relay
