// Where the saga state machine (core/saga_machine.hpp) meets the tables: load and lock a
// saga, decide, store the decision and send its commands through the outbox, all with saved
// plans in the caller's transaction, so a decision and its effects commit or roll back
// together. Internal statements run AsExtensionOwner; callers are the SQL entry points in
// saga.cpp and saga_tick.cpp.
#pragma once

#include "core/saga_machine.hpp"
#include "pg/common/guard.hpp"

#include <string>

namespace once::pg::saga_store {

// What an applied event did.
struct Applied {
    saga::ReplyResult result = saga::ReplyResult::applied;
    std::string status;  // the saga's status afterwards
    std::string step;    // the step it is at afterwards
};

// Raises 22023 unless the id is 1 to 200 printable characters and at most 255 bytes (it is
// part of every idempotency key "<saga_id>:<step>" and the ordering key of its commands).
void check_saga_id(text* saga_id);

// Applies one event to a saga: lock, (for a reply with a message id) drop a redelivery,
// decide, store, send. `output` (jsonb, 0 = NULL) is a step's output, merged into the saga's
// data when the machine accepts the step. now_ms and random01 of the event are filled here.
// saga_name: the saga's definition, or nullptr to find the saga by its id alone (ON408 when
// sagas of several definitions have it).
Applied apply(text* saga_id, text* saga_name, saga::Event event, Datum output, text* message_id);

// Starts a saga of the latest version of definition `name` (idempotent on saga_id).
// `input` is jsonb or 0 (= '{}').
void start(text* name, text* saga_id, Datum input);

}  // namespace once::pg::saga_store
