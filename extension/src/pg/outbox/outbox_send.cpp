// Producers: once.send and once.send_many write messages in the caller's transaction. Per-key
// order is not decided here but at commit (outbox_key_order.hpp): a keyed send takes no lock,
// so producers that send keys in any order never wait on one another.
#include "core/message_route.hpp"
#include "core/outbox_policy.hpp"
#include "core/topic.hpp"
#include "pg/common/spi.hpp"
#include "pg/common/text_args.hpp"
#include "pg/common/trace_context.hpp"
#include "pg/outbox/message_ids.hpp"
#include "pg/outbox/outbox_args.hpp"
#include "pg/outbox/outbox_key_order.hpp"
#include "pg/outbox/outbox_notify.hpp"
#include "pg/outbox/outbox_row.hpp"
#include "pg/outbox/outbox_wal_send.hpp"
#include "pg/outbox/publish_grants.hpp"

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

OutboxInsert insert_plan;
OutboxInsert insert_explicit_plan("", " ON CONFLICT (id) DO NOTHING");

// A repeated explicit message_id is a no-op only for the same message: skipping any repeat
// silently would let a producer pre-empt another's id with its own topic and payload. (Ids of other roles cannot meet here: message_ids.hpp.) (pg_catalog operators only: no IS DISTINCT FROM, which looks up "=".)
SavedPlan same_message_plan(
    "SELECT o.topic OPERATOR(pg_catalog.=) $2"
    "   AND COALESCE(o.key OPERATOR(pg_catalog.=) $3, o.key IS NULL AND $3 IS NULL)"
    "   AND o.payload OPERATOR(pg_catalog.=) $4"
    "   AND COALESCE(o.headers OPERATOR(pg_catalog.=) $5, o.headers IS NULL AND $5 IS NULL)"
    "   AND COALESCE(o.content_type OPERATOR(pg_catalog.=) $6, o.content_type IS NULL AND $6 IS NULL)"
    "  FROM once.outbox o WHERE o.id OPERATOR(pg_catalog.=) $1",
    {UUIDOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, TEXTOID});

// once.send_many's rows: the topic, headers (the transaction's trace context), key owner and
// content type shared by all of them.
OutboxInsertMany insert_many_plan({"id", "key", "key_seq", "payload", "pos"});

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


// The messages of one once.send or once.send_many call, validated, with their ids.
struct Outgoing {
    text* topic = nullptr;
    std::vector<Uuid> generated;    // fresh v7 ids in send order: the provisional key_seqs, and
                                    // the ids unless the producer chose one
    std::vector<Datum> ids;         // the ids the call returns (in the caller's memory context)
    std::vector<Datum> payloads;    // jsonb
    std::vector<text*> keys;        // nullptr: unkeyed
    Jsonb* headers = nullptr;       // every message's headers (NULL: none)
    text* content_type = nullptr;   // every message's content type (NULL: application/json)
    // once.send only (one message):
    bool has_deliver_at = false;
    TimestampTz deliver_at = 0;
    TimestampTz wall = 0;           // the clock, read before the id was generated
    bool explicit_id = false;
    // once.send_many only: its arrays, which the batch INSERT unnests (nullptr: once.send)
    ArrayType* payload_array = nullptr;
    ArrayType* key_array = nullptr;
};

// once.send's row: the id's claim position (pos NULL), or deliver_at when that lies in the
// future, or a fresh v7 uuid when the producer chose the id; ON CONFLICT for a chosen id.
void insert_one_row(const Outgoing& out) {
    text* key = out.keys[0];
    const Uuid& generated = out.generated[0];
    Datum id = out.ids[0];
    const bool delayed = out.has_deliver_at && out.deliver_at > out.wall;
    const bool has_pos = delayed || out.explicit_id;
    Uuid pos = delayed ? uuid_v7_at(static_cast<uint64_t>(unix_ms(out.deliver_at)), random10()) : generated;
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
        OutboxRow row;
        row.id.set(id);
        row.pos.set_if(has_pos || waiting, uuid_datum(waiting ? waiting_position() : pos));
        row.topic.set(PointerGetDatum(out.topic));
        row.key.set_if(key != nullptr, PointerGetDatum(key));
        row.key_seq.set_if(key != nullptr, key_seq);
        row.payload.set(out.payloads[0]);
        row.headers.set_if(out.headers != nullptr, PointerGetDatum(out.headers));
        row.visible_at.set_if(out.has_deliver_at, TimestampTzGetDatum(out.deliver_at));
        row.key_owner.set(ObjectIdGetDatum(key_owner));
        row.content_type.set_if(out.content_type != nullptr, PointerGetDatum(out.content_type));
        inserted = (out.explicit_id ? insert_explicit_plan : insert_plan).execute(row);
    }
    if (out.explicit_id && inserted == 0) {
        Datum same_values[] = {id, PointerGetDatum(out.topic), PointerGetDatum(key), out.payloads[0],
                               PointerGetDatum(out.headers), PointerGetDatum(out.content_type)};
        const char same_nulls[] = {' ', ' ', key ? ' ' : 'n', ' ', out.headers ? ' ' : 'n',
                                   out.content_type ? ' ' : 'n'};
        uint64 found;
        {
            AsExtensionOwner owner;
            found = same_message_plan.execute(same_values, same_nulls, 1);
        }
        Datum same;
        if (found == 1 && spi_value(0, 1, &same) && !DatumGetBool(same))
            throw Error(ErrorCode::message_id_conflict, "message_id was already used for another message",
                        "The outbox holds a message with this id and another topic, key, payload, headers or "
                        "content_type.",
                        "Derive message ids from everything that identifies the message, or let "
                        "once.send choose the id (pass no message_id).");
    }
    if (inserted == 1) {
        if (key != nullptr)
            outbox_key_order_sent(key, key_owner, to_uuid(id), generated, waiting,
                                  has_pos ? std::optional<Uuid>(pos) : std::nullopt);
        outbox_mark_sent();
    }
}

// once.send_many's rows, in one INSERT: claim position the id, or the waiting position for
// the messages of a held key (the later ones of the array with them; behind a ready message
// they do not wait: see key_held_plan).
void insert_batch_rows(const Outgoing& out) {
    const int n = static_cast<int>(out.ids.size());
    const Oid key_owner = current_key_owner();   // (read before AsExtensionOwner switches the user)
    ArrayType* id_array = pg_call([&] {
        return construct_array(const_cast<Datum*>(out.ids.data()), n, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR);
    });
    ArrayType* seq_array = nullptr;
    ArrayType* pos_array = nullptr;
    std::vector<bool> waiting(n, false);
    if (out.key_array != nullptr) {
        std::unordered_set<std::string> held;
        {
            Datum probe[] = {PointerGetDatum(out.key_array), ObjectIdGetDatum(key_owner)};
            AsExtensionOwner owner;
            uint64 found = keys_held_plan.execute(probe, nullptr);
            for (uint64 r = 0; r < found; ++r) {
                Datum k;
                if (spi_value(r, 1, &k)) held.emplace(text_view(DatumGetTextPP(k)));
            }
        }
        std::vector<Datum> pos_values(n, 0), seq_values(n, 0);
        std::unique_ptr<bool[]> pos_nulls(new bool[n]), seq_nulls(new bool[n]);
        Datum wait_pos = uuid_datum(waiting_position());
        for (int i = 0; i < n; ++i) {
            pos_nulls[i] = true;
            seq_nulls[i] = out.keys[i] == nullptr;
            if (out.keys[i] == nullptr) continue;
            // provisional key_seq = the id (strictly increasing: array order); the pre-commit
            // step orders them after other producers' commits (outbox_key_order.hpp)
            seq_values[i] = uuid_datum(out.generated[i]);
            waiting[i] = held.count(std::string(text_view(out.keys[i]))) > 0;
            if (waiting[i]) {
                pos_values[i] = wait_pos;
                pos_nulls[i] = false;
            }
        }
        int dims[1] = {n}, lbs[1] = {1};
        pos_array = pg_call([&] {
            return construct_md_array(pos_values.data(), pos_nulls.get(), 1, dims, lbs, UUIDOID, UUID_LEN, false,
                                      TYPALIGN_CHAR);
        });
        seq_array = pg_call([&] {
            return construct_md_array(seq_values.data(), seq_nulls.get(), 1, dims, lbs, UUIDOID, UUID_LEN, false,
                                      TYPALIGN_CHAR);
        });
    }
    OutboxRow rows;
    rows.id.set(PointerGetDatum(id_array));
    rows.key.set_if(out.key_array != nullptr, PointerGetDatum(out.key_array));
    rows.key_seq.set_if(seq_array != nullptr, PointerGetDatum(seq_array));
    rows.payload.set(PointerGetDatum(out.payload_array));
    rows.pos.set_if(pos_array != nullptr, PointerGetDatum(pos_array));
    rows.topic.set(PointerGetDatum(out.topic));
    rows.headers.set_if(out.headers != nullptr, PointerGetDatum(out.headers));
    rows.key_owner.set(ObjectIdGetDatum(key_owner));
    rows.content_type.set_if(out.content_type != nullptr, PointerGetDatum(out.content_type));
    {
        AsExtensionOwner owner;
        insert_many_plan.execute(rows);
    }
    for (int i = 0; i < n; ++i)
        if (out.keys[i] != nullptr)
            outbox_key_order_sent(out.keys[i], key_owner, to_uuid(out.ids[i]), out.generated[i], waiting[i],
                                  std::nullopt);
    outbox_mark_sent();
}

// The one path of once.send and once.send_many after validation, inside their SPI session:
// each message's route (route_batch, core/message_route.hpp), then rows, or WAL messages
// emitted now (unkeyed) or held for the pre-commit step (keyed: outbox_key_order.hpp), in
// send order.
void store_messages(const Outgoing& out) {
    const size_t n = out.ids.size();
    if (n == 0) return;
    std::vector<RouteFacts> facts;
    facts.reserve(n);
    for (size_t i = 0; i < n; ++i)
        facts.push_back(route_facts_at_send(out.keys[i] != nullptr, out.has_deliver_at, out.explicit_id));
    const std::vector<Route> routes = route_batch(facts);
    if (routes.front() == Route::table_row) {   // then all of them (route_batch)
        if (out.payload_array == nullptr)
            insert_one_row(out);
        else
            insert_batch_rows(out);
        return;
    }
    const Oid key_owner = current_key_owner();
    for (size_t i = 0; i < n; ++i) {
        Jsonb* payload = pg_call([&] { return DatumGetJsonbP(out.payloads[i]); });
        if (routes[i] == Route::wal_now) {
            outbox_wal_send(to_uuid(out.ids[i]), out.topic, payload, out.headers, out.content_type);
            continue;
        }
        WalMessage message = wal_message_of(out.generated[i], out.topic, payload, out.headers, out.content_type);
        message.key = std::string(text_view(out.keys[i]));
        message.key_owner = key_owner;
        message.key_seq = out.generated[i];   // provisional, as the table's
        outbox_key_order_deferred(std::move(message), facts[i]);
    }
}

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
    text* content_type = content_type_arg(fcinfo, 6);
    check_payload_for_content_type(content_type, payload, "payload");

    SpiSession spi;
    check_may_publish(text_view(topic));
    // The transaction gets its xid before the id is generated: a claim's low watermark never
    // passes an id that may still be committed (see claim_low_watermark).
    pg_call([] { (void)GetCurrentTransactionId(); });
    Outgoing out;
    out.topic = topic;
    out.wall = GetCurrentTimestamp();
    out.generated.push_back(next_id());
    // (allocated in the caller's context: it is the result, returned after SPI has finished)
    out.ids.push_back(uuid_datum(explicit_id ? role_scoped_message_id(to_uuid(PG_GETARG_DATUM(5))) : out.generated[0],
                                 spi.caller_context()));
    out.payloads.push_back(PointerGetDatum(payload));
    out.keys.push_back(key);
    out.headers = headers;
    out.has_deliver_at = has_deliver_at;
    out.deliver_at = deliver_at;
    out.explicit_id = explicit_id;
    out.content_type = content_type;
    store_messages(out);
    return out.ids[0];
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

    text* content_type = content_type_arg(fcinfo, 3);
    for (int i = 0; i < n; ++i)
        check_payload_for_content_type(content_type, pg_call([&] { return DatumGetJsonbP(payload_elems[i]); }),
                                       "payload " + std::to_string(i + 1));

    Outgoing out;
    out.topic = topic;
    out.content_type = content_type;
    out.payload_array = payloads;
    out.key_array = keys;
    {
        SpiSession spi;
        check_may_publish(text_view(topic));
        pg_call([] { (void)GetCurrentTransactionId(); });  // before the ids: see once_send
        out.generated = next_ids(n);
        for (int i = 0; i < n; ++i) {
            out.ids.push_back(uuid_datum(out.generated[i], spi.caller_context()));  // returned after SPI has finished
            out.payloads.push_back(payload_elems[i]);
            out.keys.push_back(keys != nullptr && !key_nulls[i] ? DatumGetTextPP(key_elems[i]) : nullptr);
        }
        if (n > 0) out.headers = with_trace_context(nullptr);
        store_messages(out);
    }
    pg_call([&] {
        InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
        auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
        for (int i = 0; i < n; ++i) {
            bool isnull = false;
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &out.ids[i], &isnull);
        }
    });
    return (Datum)0;
}
