// once.send through the WAL transport (once.transport = 'wal'; docs/design.md, "WAL
// transport"): the message becomes a transactional logical decoding message with prefix
// "pg_once" (core/wal_message.hpp) instead of a row of once.outbox. It commits or rolls back
// with the producer's transaction like the row would; once-relay reads it from a pgoutput
// slot. Unkeyed messages are emitted at once; a keyed one waits for the transaction's
// pre-commit step, which chooses its home under the key's lock (outbox_key_order.hpp).
#pragma once

#include "core/message_route.hpp"
#include "core/uuid_v7.hpp"
#include "core/wal_message.hpp"
#include "pg/common/postgres_headers.hpp"

namespace once::pg {

// The facts core/message_route.hpp routes a message of once.send / once.send_many by, at send:
// once.transport and whether pg_once is preloaded (the greatest key_seq per bucket lives in
// shared memory: key_seq_memory.hpp), with the message's own.
RouteFacts route_facts_at_send(bool has_key, bool has_deliver_at, bool has_explicit_id);

// The message once.send would write, without key order (the caller sets key, key_owner,
// key_seq); refuses in a read-only transaction as the table's insert does. created_at is the
// transaction's start, as the table's DEFAULT now() would have made it. content_type NULL:
// none (application/json), a message of format 1 or 2.
WalMessage wal_message_of(const Uuid& id, text* topic, Jsonb* payload, Jsonb* headers, text* content_type);

// Emits the message in the current transaction, tagged with the database's key
// (wal_message_tag.hpp); call inside an SPI session (also from the pre-commit step).
void emit_wal_message(const WalMessage& message);

// wal_message_of + emit_wal_message: an unkeyed message.
void outbox_wal_send(const Uuid& id, text* topic, Jsonb* payload, Jsonb* headers, text* content_type);

// Inserts a deferred keyed message as the row once.send would have inserted (key_seq as
// given, waiting or at its id's position), from the pre-commit step inside an SPI session.
void insert_deferred_as_row(const WalMessage& message, bool waiting);

}  // namespace once::pg
