// Producers: once.send and once.send_many write messages in the caller's transaction. Per-key
// order is not decided here but at commit (outbox_key_order.hpp): a keyed send takes no lock,
// so producers that send keys in any order never wait on one another.
#include "../core/outbox_policy.hpp"
#include "../core/topic.hpp"
#include "outbox_args.hpp"
#include "message_ids.hpp"
#include "outbox_key_order.hpp"
#include "publish_grants.hpp"
#include "outbox_notify.hpp"
#include "outbox_wal_send.hpp"
#include "spi.hpp"
#include "trace_context.hpp"
#include "text_args.hpp"

extern "C" {
#include "utils/array.h"
#include "utils/guc.h"
}

#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace once::pg {


namespace {

// $9 the key's owner: the sending role (outbox_key_order.hpp); NULL without a key.
SavedPlan insert_plan(
    "INSERT INTO once.outbox (id, pos, topic, key, key_seq, payload, headers, visible_at, key_owner)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8, pg_catalog.now()), $9)",
    {UUIDOID, UUIDOID, TEXTOID, TEXTOID, UUIDOID, JSONBOID, JSONBOID, TIMESTAMPTZOID, OIDOID});

SavedPlan insert_explicit_plan(
    "INSERT INTO once.outbox (id, pos, topic, key, key_seq, payload, headers, visible_at, key_owner)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8, pg_catalog.now()), $9)"
    " ON CONFLICT (id) DO NOTHING",
    {UUIDOID, UUIDOID, TEXTOID, TEXTOID, UUIDOID, JSONBOID, JSONBOID, TIMESTAMPTZOID, OIDOID});

// A repeated explicit message_id is a no-op only for the same message: skipping any repeat
// silently would let a producer pre-empt another's id with its own topic and payload. (Ids of other roles cannot meet here: message_ids.hpp.) (pg_catalog operators only: no IS DISTINCT FROM, which looks up "=".)
SavedPlan same_message_plan(
    "SELECT o.topic OPERATOR(pg_catalog.=) $2"
    "   AND COALESCE(o.key OPERATOR(pg_catalog.=) $3, o.key IS NULL AND $3 IS NULL)"
    "   AND o.payload OPERATOR(pg_catalog.=) $4"
    "   AND COALESCE(o.headers OPERATOR(pg_catalog.=) $5, o.headers IS NULL AND $5 IS NULL)"
    "  FROM once.outbox o WHERE o.id OPERATOR(pg_catalog.=) $1",
    {UUIDOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID});

// $7: the transaction's trace context as headers of every message (NULL: none); $8 the keys'
// owner, the sending role.
SavedPlan insert_many_plan(
    "INSERT INTO once.outbox (id, pos, topic, key, key_seq, payload, headers, visible_at, key_owner)"
    " SELECT u.id, u.pos, $1, u.key, u.key_seq, u.payload, $7, pg_catalog.now(),"
    "        CASE WHEN u.key IS NOT NULL THEN $8 END"
    "   FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4),"
    "                  pg_catalog.unnest($5), pg_catalog.unnest($6)) AS u(id, key, key_seq, payload, pos)",
    {TEXTOID, UUIDARRAYOID, TEXTARRAYOID, UUIDARRAYOID, JSONBARRAYOID, UUIDARRAYOID, JSONBOID, OIDOID});

// Whether a new message of a key waits (outbox_key_order.hpp): when the last message of the key
// that its role ($2) sent (this transaction's own included) waits itself or is held -- leased to a relay,
// retrying, delayed or dead (visible_at ahead). Behind a ready message it does not: that one
// is claimed at once, and waiting would cost a promotion where a claim skips it once or twice.
// One probe of outbox_key.
SavedPlan key_held_plan(
    "SELECT 1 WHERE (SELECT o.pos OPERATOR(pg_catalog.=) " ONCE_SQL_WAITING_POSITION
    "                       OR o.visible_at OPERATOR(pg_catalog.>) pg_catalog.now()"
    "                  FROM once.outbox o WHERE o.key OPERATOR(pg_catalog.=) $1 AND o.key IS NOT NULL"
    "                   AND o.key_owner OPERATOR(pg_catalog.=) $2"
    "                 ORDER BY o.key_seq DESC LIMIT 1)",
    {TEXTOID, OIDOID});

// The same for the distinct keys of a send_many: those whose new messages wait.
SavedPlan keys_held_plan(R"(
SELECT d.key FROM (SELECT DISTINCT k.key FROM pg_catalog.unnest($1::pg_catalog.text[]) AS k(key)
                    WHERE k.key IS NOT NULL) d
 WHERE (SELECT o.pos OPERATOR(pg_catalog.=) )" ONCE_SQL_WAITING_POSITION R"(
               OR o.visible_at OPERATOR(pg_catalog.>) pg_catalog.now()
          FROM once.outbox o WHERE o.key OPERATOR(pg_catalog.=) d.key AND o.key IS NOT NULL
           AND o.key_owner OPERATOR(pg_catalog.=) $2
         ORDER BY o.key_seq DESC LIMIT 1))",
                         {TEXTARRAYOID, OIDOID});

}  // namespace


}  // namespace once::pg

using namespace once;
using namespace once::pg;

ONCE_SQL_FUNCTION(once_send) {
    text* topic = topic_arg(fcinfo, 0);
    if (PG_ARGISNULL(1))
        throw Error(ErrorCode::invalid_payload, "payload must not be NULL", {},
                    "Send an object such as '{\"order_id\": 42}'.");
    Jsonb* payload = checked_payload(PG_GETARG_DATUM(1), "payload", PG_ARGISNULL(3) ? 0 : jsonb_bytes(PG_GETARG_DATUM(3)));
    text* key = nullptr;
    if (!PG_ARGISNULL(2)) {
        key = PG_GETARG_TEXT_PP(2);
        validate_message_key(text_view(key));
    }
    Json parsed_headers;
    Jsonb* headers = headers_arg(fcinfo, 3, &parsed_headers);
    headers = with_trace_context(headers, &parsed_headers);
    const bool has_deliver_at = !PG_ARGISNULL(4);
    TimestampTz deliver_at = has_deliver_at ? PG_GETARG_TIMESTAMPTZ(4) : 0;
    if (has_deliver_at && TIMESTAMP_NOT_FINITE(deliver_at))
        throw Error(ErrorCode::invalid_interval, "deliver_at must be a finite time", {},
                    "Pass NULL to deliver at once.");
    // (the claim position holds 48-bit Unix milliseconds: far-future times would wrap)
    if (has_deliver_at && deliver_at > GetCurrentTransactionStartTimestamp() + kMaxDeliverAheadMs * 1000)
        throw Error(ErrorCode::invalid_interval, "deliver_at is too far in the future",
                    "deliver_at may lie at most " + std::to_string(kMaxDeliverAheadMs / (24 * 3600 * 1000)) +
                        " days after the start of the transaction.",
                    "Schedule far-future work elsewhere and send the message closer to its time.");
    const bool explicit_id = !PG_ARGISNULL(5);

    SpiSession spi;
    check_may_publish(text_view(topic));
    // The transaction gets its xid before the id is generated: a claim's low watermark never
    // passes an id that may still be committed (see claim_low_watermark).
    pg_call([] { (void)GetCurrentTransactionId(); });
    TimestampTz wall = GetCurrentTimestamp();
    Uuid generated = next_id();
    // (allocated in the caller's context: it is the result, returned after SPI has finished)
    Datum id = uuid_datum(explicit_id ? role_scoped_message_id(to_uuid(PG_GETARG_DATUM(5))) : generated,
                          spi.caller_context());
    if (goes_through_wal(key != nullptr, has_deliver_at)) {  // once.transport = 'wal'
        outbox_wal_send(to_uuid(id), topic, payload, headers);
        return id;
    }
    if (key != nullptr && keyed_goes_through_wal(has_deliver_at, explicit_id)) {
        // Its home (stream or table) is chosen at pre-commit under the key's lock.
        WalMessage message = wal_message_of(generated, topic, payload, headers);
        message.key = std::string(text_view(key));
        message.key_owner = current_key_owner();
        message.key_seq = generated;   // provisional, as the table's
        outbox_key_order_deferred(std::move(message));
        return id;
    }
    // The claim position: the id itself (pos NULL), or deliver_at when that lies in the
    // future, or a fresh v7 uuid when the producer chose the id.
    const bool delayed = has_deliver_at && deliver_at > wall;
    const bool has_pos = delayed || explicit_id;
    Uuid pos = delayed ? uuid_v7_at(static_cast<uint64_t>(unix_ms(deliver_at)), random10()) : generated;
    // provisional: the pre-commit step moves it after key_seqs committed by others meanwhile
    Datum key_seq = key != nullptr ? uuid_datum(generated) : 0;
    const Oid key_owner = current_key_owner();   // (read before AsExtensionOwner switches the user)
    uint64 inserted;
    bool waiting = false;
    {
        AsExtensionOwner owner;
        if (key != nullptr) {
            Datum probe[] = {PointerGetDatum(key), ObjectIdGetDatum(key_owner)};
            waiting = key_held_plan.execute(probe, nullptr, 1) == 1;
        }
        Datum values[] = {id, uuid_datum(waiting ? waiting_position() : pos), PointerGetDatum(topic),
                          PointerGetDatum(key), key_seq, PointerGetDatum(payload), PointerGetDatum(headers),
                          TimestampTzGetDatum(deliver_at), ObjectIdGetDatum(key_owner)};
        const char nulls[] = {' ', has_pos || waiting ? ' ' : 'n', ' ', key ? ' ' : 'n', key ? ' ' : 'n', ' ',
                              headers ? ' ' : 'n', has_deliver_at ? ' ' : 'n', key ? ' ' : 'n'};
        inserted = (explicit_id ? insert_explicit_plan : insert_plan).execute(values, nulls);
    }
    if (explicit_id && inserted == 0) {
        Datum same_values[] = {id, PointerGetDatum(topic), PointerGetDatum(key), PointerGetDatum(payload),
                               PointerGetDatum(headers)};
        const char same_nulls[] = {' ', ' ', key ? ' ' : 'n', ' ', headers ? ' ' : 'n'};
        uint64 found;
        {
            AsExtensionOwner owner;
            found = same_message_plan.execute(same_values, same_nulls, 1);
        }
        Datum same;
        if (found == 1 && spi_value(0, 1, &same) && !DatumGetBool(same))
            throw Error(ErrorCode::message_id_conflict, "message_id was already used for another message",
                        "The outbox holds a message with this id and another topic, key, payload or headers.",
                        "Derive message ids from everything that identifies the message, or let "
                        "once.send choose the id (pass no message_id).");
    }
    if (inserted == 1) {
        if (key != nullptr)
            outbox_key_order_sent(key, key_owner, to_uuid(id), generated, waiting,
                                  has_pos ? std::optional<Uuid>(pos) : std::nullopt);
        outbox_mark_sent();
    }
    return id;
}

ONCE_SQL_FUNCTION(once_send_many) {
    text* topic = topic_arg(fcinfo, 0);
    if (PG_ARGISNULL(1))
        throw Error(ErrorCode::invalid_payload, "payloads must not be NULL", {},
                    "Pass an array of JSON payloads.");
    ArrayType* payloads = PG_GETARG_ARRAYTYPE_P(1);
    Datum* payload_elems = nullptr;
    bool* payload_nulls = nullptr;
    int n = 0;
    pg_call([&] { deconstruct_array(payloads, JSONBOID, -1, false, TYPALIGN_INT, &payload_elems, &payload_nulls, &n); });
    if (n > kMaxSendMany)
        throw Error(ErrorCode::invalid_batch, "too many payloads",
                    std::to_string(n) + " payloads; once.send_many takes at most " +
                        std::to_string(kMaxSendMany) + ".",
                    "Split the array into several calls.");
    if (ARR_NDIM(payloads) > 1)
        throw Error(ErrorCode::invalid_batch, "payloads must be a one-dimensional array");
    for (int i = 0; i < n; ++i) {
        const std::string what = "payload " + std::to_string(i + 1);
        if (payload_nulls[i])
            throw Error(ErrorCode::invalid_payload, what + " is NULL", {},
                        "Every element of payloads must be a JSON value other than null.");
        checked_payload(payload_elems[i], what);
    }

    ArrayType* keys = PG_ARGISNULL(2) ? nullptr : PG_GETARG_ARRAYTYPE_P(2);
    Datum* key_elems = nullptr;
    bool* key_nulls = nullptr;
    int nkeys = 0;
    if (keys != nullptr) {
        pg_call([&] { deconstruct_array(keys, TEXTOID, -1, false, TYPALIGN_INT, &key_elems, &key_nulls, &nkeys); });
        if (nkeys != n)
            throw Error(ErrorCode::invalid_batch, "keys and payloads must have the same length",
                        "payloads has " + std::to_string(n) + " elements, keys " + std::to_string(nkeys) + ".",
                        "Pass one key (or NULL) per payload, or keys => NULL.");
        for (int i = 0; i < n; ++i)
            if (!key_nulls[i]) validate_message_key(text_view(DatumGetTextPP(key_elems[i])));
    }

    std::vector<Datum> ids(n), key_seqs(n);
    std::vector<bool> seq_nulls(n, true);
    const Oid key_owner = current_key_owner();   // (read before AsExtensionOwner switches the user)
    {
        SpiSession spi;
        check_may_publish(text_view(topic));
        pg_call([] { (void)GetCurrentTransactionId(); });  // before the ids: see once_send
        // Provisional key_seq = the id (strictly increasing: array order); the pre-commit step
        // orders them after other producers' commits (outbox_key_order.hpp).
        std::vector<Uuid> fresh = next_ids(n);
        for (int i = 0; i < n; ++i) {
            const Uuid& id = fresh[i];
            ids[i] = uuid_datum(id, spi.caller_context());  // returned after SPI has finished
            if (keys != nullptr && !key_nulls[i]) {
                key_seqs[i] = uuid_datum(id);
                seq_nulls[i] = false;
            }
        }
        bool any_key = false;
        for (int i = 0; keys != nullptr && i < n; ++i) any_key = any_key || !key_nulls[i];
        // once.transport = 'wal': unkeyed messages are emitted now, keyed ones (when they may
        // ride the WAL) wait for pre-commit, in array order.
        if (n > 0 && goes_through_wal(false, false) && (!any_key || keyed_goes_through_wal(false, false))) {
            Jsonb* trace = with_trace_context(nullptr);
            for (int i = 0; i < n; ++i) {
                Jsonb* payload = pg_call([&] { return DatumGetJsonbP(payload_elems[i]); });
                if (keys == nullptr || key_nulls[i]) {
                    outbox_wal_send(fresh[i], topic, payload, trace);
                    continue;
                }
                WalMessage message = wal_message_of(fresh[i], topic, payload, trace);
                message.key = std::string(text_view(DatumGetTextPP(key_elems[i])));
                message.key_owner = key_owner;
                message.key_seq = fresh[i];
                outbox_key_order_deferred(std::move(message));
            }
        } else if (n > 0) {
            ArrayType* id_array = pg_call([&] {
                return construct_array(ids.data(), n, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR);
            });
            ArrayType* seq_array = nullptr;
            ArrayType* pos_array = nullptr;
            std::vector<bool> waiting(n, false);
            if (keys != nullptr) {
                // Messages of a held key wait, the later ones of the array with them; behind a
                // ready message they do not (see key_held_plan).
                std::unordered_set<std::string> held;
                {
                    Datum probe[] = {PointerGetDatum(keys), ObjectIdGetDatum(key_owner)};
                    AsExtensionOwner owner;
                    uint64 found = keys_held_plan.execute(probe, nullptr);
                    for (uint64 r = 0; r < found; ++r) {
                        Datum k;
                        if (spi_value(r, 1, &k)) held.emplace(text_view(DatumGetTextPP(k)));
                    }
                }
                std::vector<Datum> pos_values(n, 0);
                std::unique_ptr<bool[]> pos_nulls(new bool[n]);
                Datum wait_pos = uuid_datum(waiting_position());
                for (int i = 0; i < n; ++i) {
                    pos_nulls[i] = true;
                    if (key_nulls[i]) continue;
                    waiting[i] = held.count(std::string(text_view(DatumGetTextPP(key_elems[i])))) > 0;
                    if (waiting[i]) {
                        pos_values[i] = wait_pos;
                        pos_nulls[i] = false;
                    }
                }
                int pos_dims[1] = {n}, pos_lbs[1] = {1};
                pos_array = pg_call([&] {
                    return construct_md_array(pos_values.data(), pos_nulls.get(), 1, pos_dims, pos_lbs, UUIDOID,
                                              UUID_LEN, false, TYPALIGN_CHAR);
                });
                std::vector<Datum> seq_values(n);
                std::unique_ptr<bool[]> nulls(new bool[n]);
                for (int i = 0; i < n; ++i) {
                    seq_values[i] = seq_nulls[i] ? 0 : key_seqs[i];
                    nulls[i] = seq_nulls[i];
                }
                int dims[1] = {n}, lbs[1] = {1};
                seq_array = pg_call([&] {
                    return construct_md_array(seq_values.data(), nulls.get(), 1, dims, lbs, UUIDOID,
                                              UUID_LEN, false, TYPALIGN_CHAR);
                });
            }
            Jsonb* trace = with_trace_context(nullptr);
            Datum values[] = {PointerGetDatum(topic),     PointerGetDatum(id_array), PointerGetDatum(keys),
                              PointerGetDatum(seq_array), PointerGetDatum(payloads), PointerGetDatum(pos_array),
                              PointerGetDatum(trace),     ObjectIdGetDatum(key_owner)};
            const char nulls[] = {' ', ' ', keys ? ' ' : 'n', seq_array ? ' ' : 'n', ' ', pos_array ? ' ' : 'n',
                                  trace ? ' ' : 'n', ' '};
            {
                AsExtensionOwner owner;
                insert_many_plan.execute(values, nulls);
            }
            for (int i = 0; i < n; ++i)
                if (!seq_nulls[i])
                    outbox_key_order_sent(DatumGetTextPP(key_elems[i]), key_owner, to_uuid(ids[i]),
                                          to_uuid(key_seqs[i]), waiting[i], std::nullopt);
            outbox_mark_sent();
        }
    }
    pg_call([&] {
        InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
        auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
        for (int i = 0; i < n; ++i) {
            bool isnull = false;
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &ids[i], &isnull);
        }
    });
    return (Datum)0;
}
