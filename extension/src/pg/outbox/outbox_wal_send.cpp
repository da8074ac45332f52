#include "pg/outbox/outbox_wal_send.hpp"

#include "core/error.hpp"
#include "core/outbox_policy.hpp"
#include "pg/common/convert.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/settings.hpp"
#include "pg/common/spi.hpp"
#include "pg/outbox/key_seq_memory.hpp"
#include "pg/outbox/outbox_row.hpp"
#include "pg/outbox/wal_message_tag.hpp"

extern "C" {
#include "access/xact.h"
#include "tcop/utility.h"  // PreventCommandIfReadOnly
#include "utils/fmgrprotos.h"  // jsonb_in
#include "utils/timestamp.h"
}

#include <string>

namespace once::pg {

namespace {

// A keyed message whose home the pre-commit step chose to be the table: the row once.send
// would have inserted (its claim position: NULL = its id, or the waiting position).
OutboxInsert insert_deferred_plan;

}  // namespace

RouteFacts route_facts_at_send(bool has_key, bool has_deliver_at, bool has_explicit_id) {
    RouteFacts facts;
    facts.transport =
        outbox_transport == static_cast<int>(OutboxTransport::wal) ? Transport::wal : Transport::table;
    facts.has_key = has_key;
    facts.has_deliver_at = has_deliver_at;
    facts.explicit_id = has_explicit_id;
    facts.preloaded = key_seq_memory_available();
    return facts;
}

WalMessage wal_message_of(const Uuid& id, text* topic, Jsonb* payload, Jsonb* headers, text* content_type) {
    // The table's INSERT fails in a read-only transaction (25006); LogLogicalMessage would not,
    // so the WAL transport refuses the same way: once.send's guarantees do not depend on the
    // transport.
    pg_call([] { PreventCommandIfReadOnly("once.send"); });
    WalMessage message;
    message.id = id;
    // TimestampTz counts microseconds from 2000-01-01; the wire format counts from 1970.
    message.created_at_us = GetCurrentTransactionStartTimestamp() +
                            static_cast<int64_t>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
    message.topic = std::string(text_view(topic));
    // The text form jsonb_out prints: what a relay reading the table gets for the same value.
    message.payload = jsonb_text(PointerGetDatum(payload));
    if (headers) message.headers = jsonb_text(PointerGetDatum(headers));
    if (content_type) message.content_type = std::string(text_view(content_type));
    return message;
}

void emit_wal_message(const WalMessage& message) {
    std::string content = encode_wal_message(message);
    // The relay skips anything longer unread (core/wal_message.hpp), so a longer message would
    // be lost: refuse it as once.max_payload_bytes refuses a large payload.
    if (content.size() + kWalMessageTagSize > kWalMessageMaxContentBytes)
        throw Error(ErrorCode::payload_too_large, "message too large for the WAL transport",
                    "Its encoded form (topic, key, headers and payload as JSON text) is " +
                        std::to_string(content.size() + kWalMessageTagSize) + " bytes; the WAL transport carries at most " +
                        std::to_string(kWalMessageMaxContentBytes) + ".",
                    "Store large documents elsewhere and send a reference.");
    append_wal_message_tag(content, wal_message_hmac_tag(current_wal_message_origin(), content));
    static const std::string prefix(kWalMessagePrefix);
    pg_call([&] { compat::log_logical_message(prefix.c_str(), content.data(), content.size(), true); });
}

void outbox_wal_send(const Uuid& id, text* topic, Jsonb* payload, Jsonb* headers, text* content_type) {
    emit_wal_message(wal_message_of(id, topic, payload, headers, content_type));
}

void insert_deferred_as_row(const WalMessage& m, bool waiting) {
    auto text_datum = [](const std::string& s) {
        return pg_call([&] { return PointerGetDatum(cstring_to_text_with_len(s.data(), static_cast<int>(s.size()))); });
    };
    // (the JSON text jsonb_out printed, read back: the same jsonb value)
    auto jsonb_datum = [](const std::string& s) {
        return pg_call([&] { return DirectFunctionCall1(jsonb_in, CStringGetDatum(s.c_str())); });
    };
    OutboxRow row;
    row.id.set(uuid_datum(m.id));
    row.pos.set_if(waiting, uuid_datum(waiting_position()));
    row.topic.set(text_datum(m.topic));
    row.key.set(text_datum(*m.key));
    row.key_seq.set(uuid_datum(m.key_seq));
    row.payload.set(jsonb_datum(m.payload));
    row.headers.set_if(m.headers.has_value(), m.headers ? jsonb_datum(*m.headers) : Datum(0));
    row.key_owner.set(ObjectIdGetDatum(m.key_owner));
    row.content_type.set_if(m.content_type.has_value(), m.content_type ? text_datum(*m.content_type) : Datum(0));
    AsExtensionOwner owner;
    insert_deferred_plan.execute(pg_call([] { return GetTransactionSnapshot(); }), row);
}

}  // namespace once::pg
