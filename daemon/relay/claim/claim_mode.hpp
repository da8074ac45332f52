// How the relay claims messages from the outbox (--claim-mode):
//  * locked: each open batch is one transaction on its own connection: BEGIN,
//    once.claim_locked (deletes the messages in that transaction: the lock is the lease),
//    publish, ack/nack/dead, COMMIT. No lease write; for sinks that answer fast.
//  * leased: once.claim with a lease, settled later in separate transactions; leases are
//    extended while a slow sink works. For sinks whose answers may take as long as a lease.
// --claim-mode auto (the default) takes the mode the sink asks for (Sink::preferred_claim_mode:
// leased for HTTP webhooks, locked for the others).
#pragma once

#include <string>

namespace once::relay {

// wal: not a claim mode of the table but the WAL transport's stream (claim/wal_stream.hpp),
// settled by the slot's position.
enum class ClaimMode { locked, leased, wal };

// --claim-mode auto|locked|leased; `sink_prefers` decides auto.
ClaimMode resolve_claim_mode(const std::string& option, ClaimMode sink_prefers);
const char* claim_mode_name(ClaimMode m);

}  // namespace once::relay
