// Messages taken by once.claim_locked in the current transaction.
//
// claim_locked deletes the messages it hands out inside the caller's transaction: while that
// transaction is open the deleted rows stay locked, so other relays skip them, and nothing
// else is written (no lease). Whoever claimed them settles each one before COMMIT: ack keeps
// the delete, nack/dead put the message back as a retry or a dead letter (outbox_settle.cpp).
// A COMMIT that would lose an unsettled message fails (ON213) and so rolls everything back;
// a ROLLBACK, a lost connection or a killed relay undoes the deletes by itself. The lock is
// the lease.
//
// This registry remembers, per transaction, what each claimed row held (to put it back) and
// whether it is settled, with subtransactions: work undone by ROLLBACK TO SAVEPOINT is undone
// here too.
#pragma once

#include "core/uuid_v7.hpp"
#include "pg/common/postgres_headers.hpp"

#include <optional>
#include <string>
#include <vector>

namespace once::pg {

// What a claimed row held, copied into TopTransactionContext.
struct LockedMessage {
    Uuid id;
    Datum topic;        // text
    Datum key;          // text, 0 when NULL
    Datum key_seq;      // uuid, 0 when NULL
    Oid key_owner;      // the role that sent it (outbox_key_order.hpp), InvalidOid without key
    Datum payload;      // jsonb
    Datum headers;      // jsonb, 0 when NULL
    int32 attempt;      // deliveries including this one
    TimestampTz created_at;
    Datum content_type; // text, 0 when NULL
};

void outbox_locked_init();

// Records a row claim_locked deleted (values in the current memory context, possibly
// toasted); returns the recorded, detoasted copy.
const LockedMessage& outbox_locked_claimed(const LockedMessage& message);

// The unsettled message `id` claimed in this transaction, or nullptr.
const LockedMessage* outbox_locked_find(const Uuid& id);

// Marks `id` settled (acked or put back); false when it is not an unsettled claim of ours.
bool outbox_locked_settle(const Uuid& id);

// Keys of this transaction's unsettled claims: a later claim must not hand out what follows them.
std::vector<std::string> outbox_locked_keys();

}  // namespace once::pg
