// How long a locked batch can hold its messages, and the session settings that make the
// database enforce it when the relay cannot.
//
// A locked batch is an open transaction from its claim to its COMMIT. A working relay ends
// it in time by itself: it stops handing the batch to the sink once --lease has passed since
// the claim (what is not published by then is given back with the settlement), and what it
// already handed over is answered within --sink-timeout. A relay that cannot act (SIGSTOP, a
// sink library hung inside a call, a network partition) would otherwise hold the batch, and
// every later message of its keys, until TCP gave up: hours. So the database ends a locked
// transaction idle for longer than the bound below (idle_in_transaction_session_timeout),
// and drops a connection whose peer stopped answering (TCP keepalives, tcp_user_timeout).
#pragma once

#include "duration.hpp"

#include <string>
#include <vector>

namespace once::relay {

// Time for the settlement to go out once the last answer is in (one turn of the relay's loop,
// which wakes at least every second while batches are open), with room to spare.
constexpr Millis kSettleMargin{5000};

// How long after its claim a locked batch is still handed to the sink: --lease.
Millis locked_publish_limit(Millis lease);

// The longest a locked batch is held by a relay that is frozen: publish limit + the last
// publish's answer + the margin. Documented in docs/design.md, "The loop in detail".
Millis locked_hold_bound(Millis lease, Millis sink_timeout);

// The SET statements for a locked connection, so the server ends a transaction idle longer
// than `hold_bound` and a connection to a relay that vanished from the network.
std::vector<std::string> locked_session_settings(Millis hold_bound);

}  // namespace once::relay
