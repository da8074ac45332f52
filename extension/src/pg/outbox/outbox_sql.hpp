// SQL fragments shared by the outbox statements that move a message into the same state, so
// each state change is written once: a message becomes a dead letter (a claim whose lease
// ran out on the last attempt, a nack or dead verdict), or leaves the outbox delivered (an
// ack, a claim_locked delete) with the history of topics that keep one.
#pragma once

#include <string>

namespace once::pg::outbox_sql {

// The SET items that make a row of once.outbox a dead letter, its last_error `error`
// (an SQL expression).
std::string dead_letter_assignments(const std::string& error);

// A CTE named h that writes the delivered history of the rows of CTE d (columns id, topic,
// key, payload, headers, attempt, created_at) whose topic keeps one (a retention in
// once.outbox_topic_policies); `relay` is the SQL expression of the relay's name.
std::string delivered_history_cte(const std::string& relay);

}  // namespace once::pg::outbox_sql
