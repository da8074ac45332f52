// Relays settle what they claimed: once.ack (delivered), once.nack (failed: retry later, or
// dead when the attempts are used up), once.dead (refused for good), once.extend (more time).
//
// A leased message (once.claim) is settled only by the relay that holds its lease: a relay
// whose lease was taken over changes nothing and is told so. A lock-held message
// (once.claim_locked, outbox_locked.hpp) is settled in the transaction that claimed it: its
// row is already deleted, so ack only records that it was delivered, and nack / dead write
// it back. An ack of a keyed message releases its key: the key's next message is promoted
// at commit (outbox_key_order.hpp).
#include "core/outbox_policy.hpp"
#include "pg/common/spi.hpp"
#include "pg/common/text_args.hpp"
#include "pg/outbox/outbox_args.hpp"
#include "pg/outbox/outbox_give_back.hpp"
#include "pg/outbox/outbox_key_order.hpp"
#include "pg/outbox/outbox_locked.hpp"
#include "pg/outbox/outbox_sql.hpp"

extern "C" {
#include "utils/array.h"
}

#include <optional>
#include <string>
#include <vector>

namespace once::pg {
namespace {

const std::string kAck = R"(
WITH d AS (
  DELETE FROM once.outbox o
   WHERE o.id OPERATOR(pg_catalog.=) ANY ($2) AND o.relay OPERATOR(pg_catalog.=) $1
     AND o.dead_at IS NULL
  RETURNING o.id, o.topic, o.key, o.key_seq, o.key_owner, o.payload, o.headers, o.attempt, o.created_at),)" +
                         outbox_sql::delivered_history_cte("$1") + R"(
SELECT pg_catalog.count(*)::pg_catalog.int4,
       pg_catalog.array_agg(d.key) FILTER (WHERE d.key IS NOT NULL),
       pg_catalog.array_agg(d.key_seq) FILTER (WHERE d.key IS NOT NULL),
       pg_catalog.array_agg(d.key_owner) FILTER (WHERE d.key IS NOT NULL)
  FROM d)";
SavedPlan ack_plan(kAck.c_str(), {TEXTOID, UUIDARRAYOID});

SavedPlan extend_plan(R"(
UPDATE once.outbox o SET visible_at = pg_catalog.now() OPERATOR(pg_catalog.+) $3
 WHERE o.id OPERATOR(pg_catalog.=) ANY ($2) AND o.relay OPERATOR(pg_catalog.=) $1
   AND o.dead_at IS NULL)",
                      {TEXTOID, UUIDARRAYOID, INTERVALOID});

SavedPlan nack_lookup_plan(R"(
SELECT o.attempt, (o.relay OPERATOR(pg_catalog.=) $1 AND o.dead_at IS NULL) IS TRUE, o.topic, o.key, o.key_seq,
       o.key_owner
  FROM once.outbox o
 WHERE o.id OPERATOR(pg_catalog.=) $2
   FOR UPDATE OF o)",
                           {TEXTOID, UUIDOID});

SavedPlan policy_plan(R"(
SELECT p.max_attempts,
       (pg_catalog.date_part('epoch', p.backoff_base) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8,
       (pg_catalog.date_part('epoch', p.backoff_max) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8
  FROM once.outbox_topic_policies p
 WHERE p.topic OPERATOR(pg_catalog.=) $1)",
                      {TEXTOID});

SavedPlan nack_retry_plan(R"(
UPDATE once.outbox SET relay = NULL, last_error = $2, visible_at = $3, pos = $4
 WHERE id OPERATOR(pg_catalog.=) $1)",
                          {UUIDOID, TEXTOID, TIMESTAMPTZOID, UUIDOID});

const std::string kNackDead = "UPDATE once.outbox SET " + outbox_sql::dead_letter_assignments("$2") +
                              " WHERE id OPERATOR(pg_catalog.=) $1";
SavedPlan nack_dead_plan(kNackDead.c_str(), {UUIDOID, TEXTOID});

// A lock-held message given back: the deleted row written again with its attempt counted,
// and the delivered history its claim wrote (in this transaction: now()) removed. :dead_at
// NULL: a retry at :visible_at / :pos; else dead.
OutboxInsert put_back_plan(R"(
WITH h AS (DELETE FROM once.outbox_delivered d
            WHERE d.id OPERATOR(pg_catalog.=) :id AND d.delivered_at OPERATOR(pg_catalog.=) pg_catalog.now())
)");

// A message given back (retry or dead) holds its key from now on: the messages of the key queued
// behind it ($1 key, $2 its key_seq, $3 its key_owner) wait from now on too, outside every claim range, instead
// of being read by every claim for as long as it is held (outbox_key_order.hpp). Once per
// hold: nothing is written when the first one behind it waits already.
SavedPlan hold_key_plan(R"(
UPDATE once.outbox o SET pos = )" ONCE_SQL_WAITING_POSITION R"(
 WHERE (SELECT f.pos IS NULL OR f.pos OPERATOR(pg_catalog.<>) )" ONCE_SQL_WAITING_POSITION R"(
          FROM once.outbox f
         WHERE f.key OPERATOR(pg_catalog.=) $1 AND f.key IS NOT NULL AND f.key_owner OPERATOR(pg_catalog.=) $3
           AND f.key_seq OPERATOR(pg_catalog.>) $2
         ORDER BY f.key_seq LIMIT 1)
   AND o.key OPERATOR(pg_catalog.=) $1 AND o.key IS NOT NULL AND o.key_owner OPERATOR(pg_catalog.=) $3
   AND o.key_seq OPERATOR(pg_catalog.>) $2
   AND (o.pos IS NULL OR o.pos OPERATOR(pg_catalog.<>) )" ONCE_SQL_WAITING_POSITION R"())",
                        {TEXTOID, UUIDOID, OIDOID});

void hold_key(Datum key, Datum key_seq, Oid key_owner) {
    if (key == 0 || key_seq == 0) return;
    Datum values[] = {key, key_seq, ObjectIdGetDatum(key_owner)};
    hold_key_plan.execute(values, nullptr);
}

// Splits the validated ids argument into this transaction's lock-held claims (settled here,
// counted in `settled`) and the others (returned, for the leased path).
std::vector<Datum> settle_locked(FunctionCallInfo fcinfo, int arg, int32* settled) {
    std::vector<Datum> leased;
    *settled = 0;
    for (Datum id : ids_arg(fcinfo, arg)) {
        const LockedMessage* held = outbox_locked_find(to_uuid(id));
        if (held == nullptr) {
            leased.push_back(id);
            continue;
        }
        if (held->key != 0)
            outbox_key_released(text_view(DatumGetTextPP(held->key)), held->key_owner, to_uuid(held->key_seq));
        outbox_locked_settle(to_uuid(id));
        ++*settled;
    }
    return leased;
}

}  // namespace
}  // namespace once::pg

using namespace once;
using namespace once::pg;

ONCE_SQL_FUNCTION(once_ack) {
    text* relay = relay_arg(fcinfo, 0);
    int32 acked = 0;
    std::vector<Datum> leased = settle_locked(fcinfo, 1, &acked);
    if (leased.empty()) PG_RETURN_INT32(acked);
    Datum values[] = {PointerGetDatum(relay), PointerGetDatum(uuid_array(leased))};
    SpiSession spi;
    AsExtensionOwner owner;
    ack_plan.execute(values, nullptr);
    Datum v;
    if (spi_value(0, 1, &v)) acked += DatumGetInt32(v);
    Datum seqs_v, owners_v;
    if (spi_value(0, 2, &v) && spi_value(0, 3, &seqs_v) && spi_value(0, 4, &owners_v)) {
        // heads this may have been: promote the next at commit
        Datum *keys = nullptr, *seqs = nullptr, *owners = nullptr;
        bool *key_nulls = nullptr, *seq_nulls = nullptr, *owner_nulls = nullptr;
        int n = 0, m = 0, k = 0;
        pg_call([&] {
            deconstruct_array(DatumGetArrayTypeP(v), TEXTOID, -1, false, TYPALIGN_INT, &keys, &key_nulls, &n);
            deconstruct_array(DatumGetArrayTypeP(seqs_v), UUIDOID, UUID_LEN, false, TYPALIGN_CHAR, &seqs, &seq_nulls, &m);
            deconstruct_array(DatumGetArrayTypeP(owners_v), OIDOID, sizeof(Oid), true, TYPALIGN_INT, &owners,
                              &owner_nulls, &k);
        });
        for (int i = 0; i < n && i < m && i < k; ++i)
            outbox_key_released(text_view(DatumGetTextPP(keys[i])),
                                owner_nulls[i] ? InvalidOid : DatumGetObjectId(owners[i]),
                                seq_nulls[i] ? Uuid{} : to_uuid(seqs[i]));
    }
    PG_RETURN_INT32(acked);
}

ONCE_SQL_FUNCTION(once_extend) {
    text* relay = relay_arg(fcinfo, 0);
    interval_arg_ms(fcinfo, 2, "lease", 1, kMaxLeaseMs);
    // (a lock-held message needs no extension: its lock lasts as long as the transaction)
    int32 held = 0;
    std::vector<Datum> leased;
    for (Datum id : ids_arg(fcinfo, 1)) {
        if (outbox_locked_find(to_uuid(id)) != nullptr)
            ++held;
        else
            leased.push_back(id);
    }
    if (leased.empty()) PG_RETURN_INT32(held);
    Datum values[] = {PointerGetDatum(relay), PointerGetDatum(uuid_array(leased)), PG_GETARG_DATUM(2)};
    SpiSession spi;
    AsExtensionOwner owner;
    PG_RETURN_INT32(held + static_cast<int32>(extend_plan.execute(values, nullptr)));
}

namespace once::pg {

// The retry policy of a topic (the defaults where it has none).
RetryPolicy topic_policy(Datum topic) {
    RetryPolicy policy;
    Datum values[] = {topic};
    if (policy_plan.execute(values, nullptr, 1) == 1) {
        Datum v;
        if (spi_value(0, 1, &v)) policy.max_attempts = DatumGetInt32(v);
        if (spi_value(0, 2, &v)) policy.backoff.base_ms = DatumGetInt64(v);
        if (spi_value(0, 3, &v)) policy.backoff.cap_ms = DatumGetInt64(v);
    }
    return policy;
}

GiveBack decide_give_back(const RetryPolicy& policy, int attempt, bool permanent,
                          std::optional<int64_t> retry_after) {
    NackDecision d = decide_nack(policy, attempt, retry_after, uniform01());
    if (permanent || d.dead) return {true, 0, {}};
    return {false, GetCurrentTransactionStartTimestamp() + d.delay_ms * 1000,
            uuid_v7_at(static_cast<uint64_t>(unix_ms(GetCurrentTimestamp()) + d.delay_ms), random10())};
}

OutboxRow given_back_row(Datum id, Datum created_at, int32 attempt, const GiveBack& g, Datum error) {
    OutboxRow row;
    row.id.set(id);
    row.created_at.set(created_at);
    row.attempt.set(Int32GetDatum(attempt));
    row.last_error.set_if(error != 0, error);
    if (g.dead) {
        TimestampTz never;
        TIMESTAMP_NOEND(never);
        row.visible_at.set(TimestampTzGetDatum(never));
        row.pos.set(uuid_datum(Uuid{}));   // (ONCE_SQL_DEAD_POSITION)
        row.dead_at.set(TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()));
    } else {
        row.visible_at.set(TimestampTzGetDatum(g.visible_at));
        row.pos.set(uuid_datum(g.pos));
    }
    return row;
}

}  // namespace once::pg

namespace {

// once.nack and once.dead: give a claimed message back. A retry is scheduled by the topic's
// policy (or retry_after) unless `permanent` (the sink refused it for good: HTTP 4xx, inbox
// poison) or the attempts are used up; then it is dead at once. A relay that no longer holds
// the lease changes nothing and is told "stale".
// The outcome: "retry", "dead" or "stale" (a string literal: the result Datum is made by the
// caller, outside the SPI session whose memory ends with it).
const char* give_back(FunctionCallInfo fcinfo, bool permanent) {
    text* relay = relay_arg(fcinfo, 0);
    if (PG_ARGISNULL(1))
        throw Error(ErrorCode::invalid_message_ids, "id must not be NULL", {},
                    "Pass an id returned by once.claim.");
    Datum id = PG_GETARG_DATUM(1);
    std::optional<int64_t> retry_after;
    if (!permanent && !PG_ARGISNULL(3))
        retry_after = interval_arg_ms(fcinfo, 3, "retry_after", 0, kMaxRetryAfterMs);
    Datum error = PG_ARGISNULL(2) ? 0 : PG_GETARG_DATUM(2);
    const char error_null = error ? ' ' : 'n';

    SpiSession spi;
    AsExtensionOwner owner;
    if (const LockedMessage* m = outbox_locked_find(to_uuid(id))) {
        const LockedMessage held = *m;  // (its values live in TopTransactionContext)
        GiveBack g = decide_give_back(topic_policy(held.topic), held.attempt, permanent, retry_after);
        OutboxRow row = given_back_row(id, TimestampTzGetDatum(held.created_at), held.attempt, g, error);
        row.key_seq.set_if(held.key_seq != 0, held.key_seq);
        row.topic.set(held.topic);
        row.key.set_if(held.key != 0, held.key);
        row.payload.set(held.payload);
        row.headers.set_if(held.headers != 0, held.headers);
        row.key_owner.set(ObjectIdGetDatum(held.key_owner));
        row.content_type.set_if(held.content_type != 0, held.content_type);
        put_back_plan.execute(row);
        hold_key(held.key, held.key_seq, held.key_owner);
        outbox_locked_settle(held.id);
        return g.dead ? "dead" : "retry";
    }

    Datum values[] = {PointerGetDatum(relay), id};
    if (nack_lookup_plan.execute(values, nullptr, 1) != 1)
        throw Error(ErrorCode::message_not_found, "message " + uuid_text(id) + " is not in the outbox",
                    "It was acknowledged (perhaps by a relay that took over its lease), "
                    "discarded, or never sent.",
                    "Do not retry it: nothing is left to deliver.");
    Datum v;
    const int attempt = spi_value(0, 1, &v) ? DatumGetInt32(v) : 0;
    const bool held = spi_value(0, 2, &v) && DatumGetBool(v);
    if (!held) return "stale";
    Datum topic = 0, key = 0, key_seq = 0, key_owner = 0;
    spi_value(0, 3, &topic);  // (SPI keeps this row until SPI_finish)
    spi_value(0, 4, &key);
    spi_value(0, 5, &key_seq);
    spi_value(0, 6, &key_owner);
    GiveBack g = decide_give_back(topic_policy(topic), attempt, permanent, retry_after);
    if (g.dead) {
        Datum args[] = {id, error};
        const char nulls[] = {' ', error_null};
        nack_dead_plan.execute(args, nulls);
        hold_key(key, key_seq, DatumGetObjectId(key_owner));
        return "dead";
    }
    Datum args[] = {id, error, TimestampTzGetDatum(g.visible_at), uuid_datum(g.pos)};
    const char nulls[] = {' ', error_null, ' ', ' '};
    nack_retry_plan.execute(args, nulls);
    hold_key(key, key_seq, DatumGetObjectId(key_owner));
    return "retry";
}

}  // namespace

ONCE_SQL_FUNCTION(once_nack) { return text_datum(give_back(fcinfo, false)); }

ONCE_SQL_FUNCTION(once_dead) { return text_datum(give_back(fcinfo, true)); }
