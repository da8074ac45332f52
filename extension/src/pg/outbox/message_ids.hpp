// Explicit message ids belong to the role that sends them.
//
// A producer may choose a message's id (once.send(..., message_id => ...)) so that sending the
// same message again is a no-op. Stored as given, a role that learned or guessed another's id
// could send first, its payload would go out under the victim's id, and the victim's own
// message would be refused (ON212) or dropped downstream as a duplicate. So the id a
// message gets is a version 8 uuid hashed (SHA-256) from the sending role's name and the id it
// chose: the same role choosing the same id gets the same message id every time, another role
// choosing it gets another. once.send returns that id; it is the one on the wire.
#pragma once

#include "core/uuid_v7.hpp"

namespace once::pg {

// The message id of `chosen` for the current user (current_user).
Uuid role_scoped_message_id(const Uuid& chosen);

}  // namespace once::pg
