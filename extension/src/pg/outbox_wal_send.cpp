#include "outbox_wal_send.hpp"

#include "../core/wal_message.hpp"
#include "convert.hpp"
#include "guard.hpp"
#include "settings.hpp"
#include "wal_message_tag.hpp"

extern "C" {
#include "access/xact.h"
#include "tcop/utility.h"  // PreventCommandIfReadOnly
#include "utils/timestamp.h"
}

#include <string>

namespace once::pg {

bool goes_through_wal(bool has_key, bool has_deliver_at, bool has_explicit_id) {
    return outbox_transport == static_cast<int>(OutboxTransport::wal) && !has_key && !has_deliver_at &&
           !has_explicit_id;
}

void outbox_wal_send(const Uuid& id, text* topic, Jsonb* payload, Jsonb* headers) {
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
    std::string content = encode_wal_message(message);
    append_wal_message_tag(content, wal_message_hmac_tag(content));
    static const std::string prefix(kWalMessagePrefix);
    pg_call([&] { compat::log_logical_message(prefix.c_str(), content.data(), content.size(), true); });
}

}  // namespace once::pg
