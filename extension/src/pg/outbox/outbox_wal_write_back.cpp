// once.wal_write_back: once-relay gives back a message of the WAL transport's stream that its
// sink refused or could not take (docs/design.md, "Write-back on refusal"). The message was
// never a row; it becomes one now, as if it had been claimed `attempts` times and nacked:
// due again after the sink's Retry-After (retry_after) or the topic's backoff, or a dead letter when the sink refused it for good or
// the topic's attempts are used up (the decision of once.nack, outbox_give_back.hpp). From
// the table, backoff, dead letters and redrive apply as to every message.
//
// Idempotent by id: a relay that dies between the write-back's commit and confirming the
// slot past the message reads it again and writes it back again; the second insert does
// nothing (ON CONFLICT (id) DO NOTHING) and the function returns false.
//
// Takes one record, once.wal_write_back_message (sql/src/22_outbox_wal.sql): the relay names
// each field, and a field is added by name. Checks it as once.send checks its arguments (topic,
// payload size, headers, content_type), except publishing grants: the producer that emitted the message passed them, and the relay is no producer.
// A keyed message (a stream message of format version 2 or 3) comes back with the key_owner and
// key_seq it carried, so it sorts before the key's table messages committed after it. It is
// fenced for the relay's slot (`slot`, stream_fence_slot) at the WAL insert position taken
// under the key's lock (outbox_key_order.hpp): no claim takes it, nor anything behind it,
// until that slot is confirmed past the fence (once.wal_release_fences). Why, and why per
// slot: docs/design.md, "Per-key order between the stream and the table", rule 4.
#include "core/outbox_policy.hpp"
#include "pg/common/spi.hpp"
#include "pg/outbox/outbox_args.hpp"
#include "pg/outbox/outbox_give_back.hpp"
#include "pg/outbox/outbox_key_order.hpp"
#include "pg/outbox/outbox_notify.hpp"

extern "C" {
#include "executor/executor.h"  // GetAttributeByName
#include "utils/timestamp.h"
}

#include <optional>

namespace once::pg {
namespace {

// A retry or a dead letter (given_back_row); a keyed one fenced for the relay's slot (the
// fence is the WAL insert position as the row is inserted: outbox_row.cpp).
OutboxInsert write_back_plan("", " ON CONFLICT (id) DO NOTHING");

// The fields of once.wal_write_back_message, in the order the checks below read them as
// arguments (each one's position is its index here).
constexpr const char* kRecordFields[] = {"id",         "topic",    "key",   "payload",   "headers",
                                         "created_at", "attempts", "error", "dead",      "key_owner",
                                         "key_seq",    "slot",     "retry_after", "content_type"};
constexpr int kRecordFieldCount = sizeof(kRecordFields) / sizeof(kRecordFields[0]);

void require(FunctionCallInfo fcinfo, int arg, const char* name, const char* hint) {
    if (PG_ARGISNULL(arg))
        throw Error(ErrorCode::invalid_argument, std::string(name) + " must not be NULL", {}, hint);
}

}  // namespace
}  // namespace once::pg

using namespace once;
using namespace once::pg;

namespace {
Datum write_back(FunctionCallInfo fcinfo);
}

// once.wal_write_back(message once.wal_write_back_message): its fields become the arguments of
// a call frame (kRecordFields' order), so that each is read and checked by name below as
// once.send's arguments are.
ONCE_SQL_FUNCTION(once_wal_write_back) {
    if (PG_ARGISNULL(0))
        throw Error(ErrorCode::invalid_argument, "message must not be NULL", {},
                    "Pass the message as a once.wal_write_back_message record.");
    HeapTupleHeader record = PG_GETARG_HEAPTUPLEHEADER(0);
    LOCAL_FCINFO(fields, kRecordFieldCount);
    InitFunctionCallInfoData(*fields, fcinfo->flinfo, kRecordFieldCount, fcinfo->fncollation, nullptr, nullptr);
    for (int i = 0; i < kRecordFieldCount; ++i) {
        bool isnull = true;
        fields->args[i].value = pg_call([&] { return GetAttributeByName(record, kRecordFields[i], &isnull); });
        fields->args[i].isnull = isnull;
    }
    return write_back(fields);
}

namespace {

Datum write_back(FunctionCallInfo fcinfo) {
    if (PG_ARGISNULL(0))
        throw Error(ErrorCode::invalid_message_ids, "id must not be NULL", {},
                    "Pass the id the message carried in the stream.");
    Datum id = PG_GETARG_DATUM(0);
    text* topic = topic_arg(fcinfo, 1);
    text* key = nullptr;
    if (!PG_ARGISNULL(2)) {
        key = PG_GETARG_TEXT_PP(2);
        validate_message_key(text_view(key));
        if (PG_ARGISNULL(9) || PG_ARGISNULL(10))
            throw Error(ErrorCode::invalid_argument, "a keyed message needs its key_owner and key_seq",
                        "A keyed message of the WAL stream (format version 2) carries both.",
                        "Pass the key_owner and key_seq the message carried in the stream.");
        if (PG_ARGISNULL(11))
            throw Error(ErrorCode::invalid_argument, "a keyed message needs the slot of the relay writing it back",
                        "Its fence is released by that slot's confirmation only.",
                        "Pass the name of the replication slot the message was read from.");
    } else if (!PG_ARGISNULL(9) || !PG_ARGISNULL(10) || !PG_ARGISNULL(11)) {
        throw Error(ErrorCode::invalid_argument, "key_owner, key_seq and slot need a key", {},
                    "Pass them only with the key the message carried.");
    }
    if (PG_ARGISNULL(3))
        throw Error(ErrorCode::invalid_payload, "payload must not be NULL", {},
                    "Pass the payload the message carried in the stream.");
    Jsonb* payload = checked_payload(PG_GETARG_DATUM(3), "payload", PG_ARGISNULL(4) ? 0 : jsonb_bytes(PG_GETARG_DATUM(4)));
    Jsonb* headers = headers_arg(fcinfo, 4);
    text* content_type = content_type_arg(fcinfo, 13);
    check_payload_for_content_type(content_type, payload, "payload");
    require(fcinfo, 5, "created_at", "Pass the created_at the message carried in the stream.");
    const TimestampTz created_at = PG_GETARG_TIMESTAMPTZ(5);
    if (TIMESTAMP_NOT_FINITE(created_at))
        throw Error(ErrorCode::invalid_argument, "created_at must be a finite time", {},
                    "Pass the created_at the message carried in the stream.");
    require(fcinfo, 6, "attempts", "Pass how many deliveries the relay tried (0: none).");
    const int32 attempts = PG_GETARG_INT32(6);
    if (attempts < 0)
        throw Error(ErrorCode::invalid_argument, "attempts must not be negative, not " + std::to_string(attempts),
                    "A message is written back after the relay tried to deliver it, or without a try.",
                    "Pass how many deliveries the relay tried.");
    Datum error = PG_ARGISNULL(7) ? 0 : PG_GETARG_DATUM(7);
    require(fcinfo, 8, "dead", "Pass true when the sink refused the message for good, else false.");
    const bool refused_for_good = PG_GETARG_BOOL(8);
    // The sink asked to wait this long (Retry-After), as once.nack's retry_after.
    std::optional<int64_t> retry_after;
    if (!PG_ARGISNULL(12)) retry_after = interval_arg_ms(fcinfo, 12, "retry_after", 0, kMaxRetryAfterMs);
    // 0 attempts: a keyed stream message the relay did not offer the sink because an earlier
    // message of its key is in the table; it follows that one, due at once (no backoff).
    if (attempts == 0 && refused_for_good)
        throw Error(ErrorCode::invalid_argument, "a message with no delivery attempt cannot be dead", {},
                    "Pass dead => false with attempts 0.");

    SpiSession spi;
    // (before the fence is read: see the header comment)
    if (key != nullptr) lock_key_for_write_back(text_view(key));
    AsExtensionOwner owner;
    GiveBack g = decide_give_back(topic_policy(PointerGetDatum(topic)), attempts, refused_for_good,
                                  attempts == 0 ? std::optional<int64_t>(0) : retry_after);
    OutboxRow row = given_back_row(id, TimestampTzGetDatum(created_at), attempts, g, error);
    row.topic.set(PointerGetDatum(topic));
    row.payload.set(PointerGetDatum(payload));
    row.headers.set_if(headers != nullptr, PointerGetDatum(headers));
    row.content_type.set_if(content_type != nullptr, PointerGetDatum(content_type));
    if (key != nullptr) {
        row.key.set(PointerGetDatum(key));
        row.key_seq.set(PG_GETARG_DATUM(10));
        row.key_owner.set(PG_GETARG_DATUM(9));
        row.stream_fence_slot.set(PG_GETARG_DATUM(11));
    }
    const uint64 inserted = write_back_plan.execute(row);
    if (inserted > 0) outbox_mark_sent();  // relays wake as after a send
    PG_RETURN_BOOL(inserted > 0);
}

}  // namespace
