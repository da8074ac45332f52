// once.wal_write_back: once-relay gives back a message of the WAL transport's stream that its
// sink refused or could not take (docs/design.md, "Write-back on refusal"). The message was
// never a row; it becomes one now, as if it had been claimed `attempts` times and nacked:
// due again after the topic's backoff, or a dead letter when the sink refused it for good or
// the topic's attempts are used up (the decision of once.nack, outbox_give_back.hpp). From
// the table, backoff, dead letters and redrive apply as to every message.
//
// Idempotent by id: a relay that dies between the write-back's commit and confirming the
// slot past the message reads it again and writes it back again; the second insert does
// nothing (ON CONFLICT (id) DO NOTHING) and the function returns false.
//
// Checks its arguments as once.send does (topic, payload size, headers), except publishing
// grants: the producer that emitted the message passed them, and the relay is no producer.
#include "../core/outbox_policy.hpp"
#include "outbox_args.hpp"
#include "outbox_give_back.hpp"
#include "outbox_notify.hpp"
#include "spi.hpp"

extern "C" {
#include "utils/timestamp.h"
}

#include <optional>

namespace once::pg {
namespace {

// A retry (:dead_at NULL) is due at :visible_at in claim position :pos; a dead letter has the
// state outbox_sql::dead_letter_assignments gives a row (visible_at 'infinity', the dead
// position, dead_at, no relay).
NamedPlan write_back_plan(R"(
INSERT INTO once.outbox (id, created_at, visible_at, attempt, relay, pos, dead_at, key_seq,
                         topic, key, payload, headers, last_error, key_owner)
VALUES (:id, :created_at, COALESCE(:visible_at, 'infinity'), :attempt, NULL,
        COALESCE(:pos, )" ONCE_SQL_DEAD_POSITION R"(), :dead_at, NULL, :topic, NULL, :payload, :headers,
        :last_error, NULL)
ON CONFLICT (id) DO NOTHING)",
                          {{"id", UUIDOID},
                           {"created_at", TIMESTAMPTZOID},
                           {"visible_at", TIMESTAMPTZOID},
                           {"attempt", INT4OID},
                           {"pos", UUIDOID},
                           {"dead_at", TIMESTAMPTZOID},
                           {"topic", TEXTOID},
                           {"payload", JSONBOID},
                           {"headers", JSONBOID},
                           {"last_error", TEXTOID}});

void require(FunctionCallInfo fcinfo, int arg, const char* name, const char* hint) {
    if (PG_ARGISNULL(arg))
        throw Error(ErrorCode::invalid_argument, std::string(name) + " must not be NULL", {}, hint);
}

}  // namespace
}  // namespace once::pg

using namespace once;
using namespace once::pg;

// once.wal_write_back(id, topic, key, payload, headers, created_at, attempts, error, dead)
ONCE_SQL_FUNCTION(once_wal_write_back) {
    if (PG_ARGISNULL(0))
        throw Error(ErrorCode::invalid_message_ids, "id must not be NULL", {},
                    "Pass the id the message carried in the stream.");
    Datum id = PG_GETARG_DATUM(0);
    text* topic = topic_arg(fcinfo, 1);
    // Keyed messages never ride the stream yet (once.send keeps them in the table), and a
    // keyed one written back would need the key's order across stream and table, which is
    // not built (docs/design.md, "Per-key order between the stream and the table"): a keyed
    // write-back now could only be a bug or a forgery.
    if (!PG_ARGISNULL(2))
        throw Error(ErrorCode::invalid_argument, "once.wal_write_back does not take keyed messages yet",
                    "Keyed messages are sent through the table, never through the WAL stream.",
                    "Pass key => NULL; a keyed message in the stream did not come from once.send.");
    if (PG_ARGISNULL(3))
        throw Error(ErrorCode::invalid_payload, "payload must not be NULL", {},
                    "Pass the payload the message carried in the stream.");
    Jsonb* payload = checked_payload(PG_GETARG_DATUM(3), "payload", PG_ARGISNULL(4) ? 0 : jsonb_bytes(PG_GETARG_DATUM(4)));
    Jsonb* headers = headers_arg(fcinfo, 4);
    require(fcinfo, 5, "created_at", "Pass the created_at the message carried in the stream.");
    const TimestampTz created_at = PG_GETARG_TIMESTAMPTZ(5);
    if (TIMESTAMP_NOT_FINITE(created_at))
        throw Error(ErrorCode::invalid_argument, "created_at must be a finite time", {},
                    "Pass the created_at the message carried in the stream.");
    require(fcinfo, 6, "attempts", "Pass how many deliveries the relay tried (at least 1).");
    const int32 attempts = PG_GETARG_INT32(6);
    if (attempts < 1)
        throw Error(ErrorCode::invalid_argument, "attempts must be at least 1, not " + std::to_string(attempts),
                    "A message is written back after the relay tried to deliver it.",
                    "Pass how many deliveries the relay tried.");
    Datum error = PG_ARGISNULL(7) ? 0 : PG_GETARG_DATUM(7);
    require(fcinfo, 8, "dead", "Pass true when the sink refused the message for good, else false.");
    const bool refused_for_good = PG_GETARG_BOOL(8);

    SpiSession spi;
    AsExtensionOwner owner;
    GiveBack g = decide_give_back(topic_policy(PointerGetDatum(topic)), attempts, refused_for_good, std::nullopt);
    const uint64 inserted = write_back_plan.execute({
        {"id", id},
        {"created_at", TimestampTzGetDatum(created_at)},
        {"visible_at", TimestampTzGetDatum(g.visible_at), g.dead},
        {"attempt", Int32GetDatum(attempts)},
        {"pos", g.dead ? 0 : uuid_datum(g.pos), g.dead},
        {"dead_at", TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()), !g.dead},
        {"topic", PointerGetDatum(topic)},
        {"payload", PointerGetDatum(payload)},
        {"headers", PointerGetDatum(headers), headers == nullptr},
        {"last_error", error, error == 0},
    });
    if (inserted > 0) outbox_mark_sent();  // relays wake as after a send
    PG_RETURN_BOOL(inserted > 0);
}
