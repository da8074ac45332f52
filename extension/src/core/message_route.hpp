// Which transport a message of once.send / once.send_many takes: a row of once.outbox or a
// logical decoding message in the WAL (docs/settings.md, once.transport; docs/outbox.md,
// "Transport: table or WAL"; docs/design.md, "WAL transport"). The one rule, applied at send
// and again, for keyed WAL messages, at the transaction's pre-commit step
// (pg/outbox/outbox_send.cpp, pg/outbox/outbox_key_order.cpp).
#pragma once

#include <optional>
#include <vector>

namespace once {

// The value of once.transport.
enum class Transport { table, wal };

// Where a message goes.
enum class Route {
    table_row,       // a row of once.outbox
    wal_now,         // a logical decoding message, emitted now
    wal_at_commit,   // held in memory until pre-commit, which routes it again (CommitFacts)
};

// What only the pre-commit step knows, under the key's lock.
struct CommitFacts {
    bool key_in_table = false;   // the table holds a message of the key and key_owner (another
                                 // transaction's, or one this transaction inserted)
    bool preparing = false;      // the transaction is being prepared (PREPARE TRANSACTION)
};

struct RouteFacts {
    Transport transport = Transport::table;
    bool has_key = false;
    bool has_deliver_at = false;   // any deliver_at, also one already past
    bool explicit_id = false;      // the producer chose the message_id
    bool preloaded = false;        // pg_once is in shared_preload_libraries (the key_seq memory)
    std::optional<CommitFacts> at_commit;   // nullopt: at send
};

// The rule:
//  - once.transport = 'table': a row.
//  - a message with deliver_at: a row (the stream has no notion of later).
//  - an unkeyed message: the WAL, now (an explicit message_id too: a repeat is a second message
//    of that id, which consumers deduplicate as they do a redelivery).
//  - a keyed message with an explicit message_id: a row (its repeat check needs the row).
//  - a keyed message without pg_once preloaded: a row (no shared memory for its key_seq).
//  - any other keyed message: at send, held until pre-commit; there, a row when the table holds
//    a message of its key and owner or the transaction is being prepared ("a key has one home
//    at a time"), else the WAL.
Route route_message(const RouteFacts& facts);

// once.send_many's routes: each message's route_message, except that a batch one of whose
// messages takes the table is inserted whole, as rows (one INSERT of the batch).
std::vector<Route> route_batch(const std::vector<RouteFacts>& messages);

}  // namespace once
