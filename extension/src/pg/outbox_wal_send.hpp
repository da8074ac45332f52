// once.send through the WAL transport (once.transport = 'wal'; docs/design.md, "WAL transport
// (in progress)"): the message becomes a transactional logical decoding message with prefix
// "pg_once" (core/wal_message.hpp) instead of a row of once.outbox. It commits or rolls back
// with the producer's transaction like the row would; once-relay reads it from a pgoutput
// slot. Only messages the table adds nothing to go this way: see goes_through_wal.
#pragma once

#include "../core/uuid_v7.hpp"
#include "postgres_headers.hpp"

namespace once::pg {

// Whether once.send writes this message to the WAL: once.transport is 'wal' and the message
// has no key (per-key order across the table and the stream is not designed yet), no
// deliver_at (the stream has no notion of later) and no producer-chosen message_id (the
// table's dedup of a repeated id has no counterpart in the stream).
bool goes_through_wal(bool has_key, bool has_deliver_at, bool has_explicit_id);

// Emits the message in the current transaction, tagged with the database's key
// (wal_message_tag.hpp); call inside an SPI session. created_at is the transaction's start, as
// the table's DEFAULT now() would have made it.
void outbox_wal_send(const Uuid& id, text* topic, Jsonb* payload, Jsonb* headers);

}  // namespace once::pg
