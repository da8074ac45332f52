// Transactional outbox: once.send / send_many (producers) and once.claim / ack / nack / extend
// (relays). Table layout and the reasons for it: sql/src/20_outbox.sql and docs/outbox.md.
//
// Per-key order. A keyed send takes no lock: it gives the message a provisional key_seq and
// the transaction's pre-commit step puts it after every key_seq of its key committed before
// (outbox_key_order.hpp), so a key's messages are ordered by their producers' commit order,
// then send order. A claim only takes a keyed message when no message of its key with a
// smaller key_seq is left in the outbox (in flight, waiting for a retry, or dead): one
// message per key is out at a time.
//
// The claim scan. Claims walk the pos index from a low watermark kept per backend: the pos of
// the oldest live row, capped by the start of the oldest transaction in this database that
// holds an xid (it may still commit rows with older positions). Index entries of acked rows
// below the watermark are never visited again, so an old snapshot that stops VACUUM from
// removing them does not slow claims down. The watermark moves forward at most every 100 ms
// and is recomputed from scratch every 10 s (which also picks up prepared transactions).
#include "../core/error.hpp"
#include "../core/interval_ms.hpp"
#include "../core/outbox_policy.hpp"
#include "../core/topic.hpp"
#include "guard.hpp"
#include "outbox_key_order.hpp"
#include "outbox_notify.hpp"
#include "spi.hpp"
#include "text_args.hpp"

extern "C" {
#include "access/detoast.h"
#include "utils/array.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
}

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace once::pg {
namespace {

constexpr int64 kUnixEpochOffsetMs =
    int64(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
constexpr int64 kMaxLeaseMs = int64(24) * 3600 * 1000;
constexpr int64 kMaxRetryAfterMs = int64(365) * 24 * 3600 * 1000;
constexpr int64 kMaxDeliverAheadMs = int64(3653) * 24 * 3600 * 1000;  // 10 years

int max_payload_bytes = 1024 * 1024;

int64 unix_ms(TimestampTz ts) { return ts / 1000 + kUnixEpochOffsetMs; }

std::array<uint8_t, 10> random10() {
    std::array<uint8_t, 10> r{};
    if (!pg_strong_random(r.data(), r.size()))
        throw Error(ErrorCode::internal, "could not generate random bytes for a message id");
    return r;
}

double uniform01() {
    uint64_t v = 0;
    if (!pg_strong_random(&v, sizeof v)) throw Error(ErrorCode::internal, "could not generate random bytes");
    return static_cast<double>(v >> 11) / 9007199254740992.0;  // 53 bits -> [0, 1)
}

UuidV7Generator& generator() {
    static UuidV7Generator g;
    return g;
}

Uuid next_id() { return generator().next(static_cast<uint64_t>(unix_ms(GetCurrentTimestamp())), random10()); }

Datum uuid_datum(const Uuid& id, MemoryContext context = CurrentMemoryContext) {
    auto* u = static_cast<pg_uuid_t*>(MemoryContextAlloc(context, sizeof(pg_uuid_t)));
    std::memcpy(u->data, id.data(), UUID_LEN);
    return UUIDPGetDatum(u);
}

Uuid to_uuid(Datum d) {
    Uuid id;
    std::memcpy(id.data(), DatumGetUUIDP(d)->data, UUID_LEN);
    return id;
}

std::string uuid_text(Datum d) { return uuid_to_string(to_uuid(d)); }

// Milliseconds of an interval argument; one too large for 64-bit microseconds is an error
// `code` naming it (never a wrapped-around number).
int64 interval_ms(const Interval* i, const char* name, ErrorCode code) {
    std::optional<int64_t> ms = interval_to_ms(i->month, i->day, i->time);
    if (!ms)
        throw Error(code, std::string(name) + " is out of range",
                    std::string(name) + " does not fit in 64-bit microseconds.",
                    "Pass an interval such as '30 seconds'.");
    return *ms;
}

int64 interval_arg_ms(FunctionCallInfo fcinfo, int arg, const char* name, int64 min_ms, int64 max_ms) {
    if (PG_ARGISNULL(arg))
        throw Error(ErrorCode::invalid_interval, std::string(name) + " must not be NULL");
    int64 ms = interval_ms(PG_GETARG_INTERVAL_P(arg), name, ErrorCode::invalid_interval);
    if (ms < min_ms || ms > max_ms)
        throw Error(ErrorCode::invalid_interval,
                    std::string(name) + " is out of range",
                    std::string(name) + " was " + std::to_string(ms) + " ms; it must be between " +
                        std::to_string(min_ms) + " ms and " + std::to_string(max_ms) + " ms.",
                    "Pass an interval such as '30 seconds'.");
    return ms;
}

// --------------------------------------------------------------------------- validation

text* topic_arg(FunctionCallInfo fcinfo, int arg) {
    return validated_text_arg(fcinfo, arg,
                              {ErrorCode::invalid_topic, "topic must not be NULL",
                               "Name the topic, e.g. 'order.created'."},
                              validate_topic);
}

text* relay_arg(FunctionCallInfo fcinfo, int arg) {
    return validated_text_arg(fcinfo, arg,
                              {ErrorCode::invalid_relay, "relay name must not be NULL",
                               "Name the relay process, e.g. 'host-1:4711'."},
                              validate_relay);
}

// jsonb bytes of a (possibly toasted) datum, without detoasting it.
int64 jsonb_bytes(Datum raw) {
    return static_cast<int64>(pg_call([&] { return toast_raw_datum_size(raw); }) - VARHDRSZ);
}

// Checks a payload datum (possibly toasted) and returns it detoasted. `headers_bytes`: the
// message's headers, which count toward once.max_payload_bytes with the payload.
Jsonb* checked_payload(Datum raw, const std::string& what, int64 headers_bytes = 0) {
    int64 bytes = jsonb_bytes(raw);
    if (bytes + headers_bytes > max_payload_bytes)
        throw Error(ErrorCode::payload_too_large, what + (headers_bytes > 0 ? " and headers are" : " is") + " too large",
                    what + " has " + std::to_string(bytes) + " bytes" +
                        (headers_bytes > 0 ? ", headers " + std::to_string(headers_bytes) + " bytes" : std::string()) +
                        "; once.max_payload_bytes (payload and headers together) is " +
                        std::to_string(max_payload_bytes) + ".",
                    "Store large documents elsewhere and send a reference, or raise once.max_payload_bytes.");
    Jsonb* payload = pg_call([&] { return DatumGetJsonbP(raw); });
    if (JB_ROOT_IS_SCALAR(payload)) {
        bool is_null = pg_call([&] {
            JsonbValue* v = getIthJsonbValueFromContainer(&payload->root, 0);
            return v != nullptr && v->type == jbvNull;
        });
        if (is_null)
            throw Error(ErrorCode::invalid_payload, what + " must not be JSON null", {},
                        "Send an object such as '{\"order_id\": 42}'.");
    }
    return payload;
}

Jsonb* headers_arg(FunctionCallInfo fcinfo, int arg) {
    if (PG_ARGISNULL(arg)) return nullptr;
    Jsonb* headers = PG_GETARG_JSONB_P(arg);
    if (JB_ROOT_IS_SCALAR(headers) || !JB_ROOT_IS_OBJECT(headers))
        throw Error(ErrorCode::invalid_headers, "headers must be a JSON object",
                    JB_ROOT_IS_ARRAY(headers) && !JB_ROOT_IS_SCALAR(headers) ? "headers was an array."
                                                                            : "headers was a scalar.",
                    "Pass an object such as '{\"traceparent\": \"00-...\"}' or NULL.");
    return headers;
}

// Elements of a uuid[] argument: non-NULL array of 0..kMaxClaimBatch non-NULL ids (an empty
// batch is normal in a relay's loop: ack(relay, ARRAY(SELECT id FROM claim(...)))).
std::vector<Datum> ids_arg(FunctionCallInfo fcinfo, int arg) {
    if (PG_ARGISNULL(arg))
        throw Error(ErrorCode::invalid_message_ids, "ids must not be NULL", {},
                    "Pass the ids returned by once.claim.");
    ArrayType* array = PG_GETARG_ARRAYTYPE_P(arg);
    Datum* elems = nullptr;
    bool* nulls = nullptr;
    int n = 0;
    pg_call([&] { deconstruct_array(array, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR, &elems, &nulls, &n); });
    if (n > kMaxClaimBatch)
        throw Error(ErrorCode::invalid_message_ids, "too many ids",
                    std::to_string(n) + " ids; the limit is " + std::to_string(kMaxClaimBatch) + ".");
    for (int i = 0; i < n; ++i)
        if (nulls[i])
            throw Error(ErrorCode::invalid_message_ids, "ids must not contain NULL",
                        "Element " + std::to_string(i + 1) + " is NULL.");
    return std::vector<Datum>(elems, elems + n);
}

// --------------------------------------------------------------------------- send

SavedPlan insert_plan(
    "INSERT INTO once.outbox (id, pos, topic, key, key_seq, payload, headers, visible_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8, pg_catalog.now()))",
    {UUIDOID, UUIDOID, TEXTOID, TEXTOID, UUIDOID, JSONBOID, JSONBOID, TIMESTAMPTZOID});

SavedPlan insert_explicit_plan(
    "INSERT INTO once.outbox (id, pos, topic, key, key_seq, payload, headers, visible_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8, pg_catalog.now()))"
    " ON CONFLICT (id) DO NOTHING",
    {UUIDOID, UUIDOID, TEXTOID, TEXTOID, UUIDOID, JSONBOID, JSONBOID, TIMESTAMPTZOID});

// A repeated explicit message_id is a no-op only for the same message (issue 11, finding 6):
// 0.1 skipped any repeat silently, so a producer could pre-empt another's id with its own
// topic and payload. (pg_catalog operators only: no IS DISTINCT FROM, which looks up "=".)
SavedPlan same_message_plan(
    "SELECT o.topic OPERATOR(pg_catalog.=) $2"
    "   AND COALESCE(o.key OPERATOR(pg_catalog.=) $3, o.key IS NULL AND $3 IS NULL)"
    "   AND o.payload OPERATOR(pg_catalog.=) $4"
    "   AND COALESCE(o.headers OPERATOR(pg_catalog.=) $5, o.headers IS NULL AND $5 IS NULL)"
    "  FROM once.outbox o WHERE o.id OPERATOR(pg_catalog.=) $1",
    {UUIDOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID});

SavedPlan insert_many_plan(
    "INSERT INTO once.outbox (id, topic, key, key_seq, payload, visible_at)"
    " SELECT u.id, $1, u.key, u.key_seq, u.payload, pg_catalog.now()"
    "   FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4),"
    "                  pg_catalog.unnest($5)) AS u(id, key, key_seq, payload)",
    {TEXTOID, UUIDARRAYOID, TEXTARRAYOID, UUIDARRAYOID, JSONBARRAYOID});

}  // namespace

void outbox_define_gucs() {
    DefineCustomIntVariable(
        "once.max_payload_bytes", "Largest outbox payload (jsonb bytes) once.send accepts.",
        "Larger payloads are refused with SQLSTATE ON202.", &max_payload_bytes, 1024 * 1024, 16,
        256 * 1024 * 1024, PGC_SUSET, GUC_UNIT_BYTE, nullptr, nullptr, nullptr);
}

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
    Jsonb* headers = headers_arg(fcinfo, 3);
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
    // The transaction gets its xid before the id is generated: a claim's low watermark never
    // passes an id that may still be committed (see claim_low_watermark).
    pg_call([] { (void)GetCurrentTransactionId(); });
    TimestampTz wall = GetCurrentTimestamp();
    Uuid generated = next_id();
    // (allocated in the caller's context: it is the result, returned after SPI has finished)
    Datum id = explicit_id ? PG_GETARG_DATUM(5) : uuid_datum(generated, spi.caller_context());
    // The claim position: the id itself (pos NULL), or deliver_at when that lies in the
    // future, or a fresh v7 uuid when the producer chose the id.
    const bool delayed = has_deliver_at && deliver_at > wall;
    const bool has_pos = delayed || explicit_id;
    Uuid pos = delayed ? uuid_v7_at(static_cast<uint64_t>(unix_ms(deliver_at)), random10()) : generated;
    // provisional: the pre-commit step moves it after key_seqs committed by others meanwhile
    Datum key_seq = key != nullptr ? uuid_datum(generated) : 0;
    Datum values[] = {id, uuid_datum(pos), PointerGetDatum(topic), PointerGetDatum(key), key_seq,
                      PointerGetDatum(payload), PointerGetDatum(headers), TimestampTzGetDatum(deliver_at)};
    const char nulls[] = {' ', has_pos ? ' ' : 'n', ' ', key ? ' ' : 'n', key ? ' ' : 'n', ' ',
                          headers ? ' ' : 'n', has_deliver_at ? ' ' : 'n'};
    uint64 inserted;
    {
        AsExtensionOwner owner;
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
        if (key != nullptr) outbox_key_order_sent(key, to_uuid(id), generated);
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
    {
        SpiSession spi;
        pg_call([] { (void)GetCurrentTransactionId(); });  // before the ids: see once_send
        // Provisional key_seq = the id (strictly increasing: array order); the pre-commit step
        // orders them after other producers' commits (outbox_key_order.hpp).
        for (int i = 0; i < n; ++i) {
            Uuid id = next_id();
            ids[i] = uuid_datum(id, spi.caller_context());  // returned after SPI has finished
            if (keys != nullptr && !key_nulls[i]) {
                key_seqs[i] = uuid_datum(id);
                seq_nulls[i] = false;
            }
        }
        if (n > 0) {
            ArrayType* id_array = pg_call([&] {
                return construct_array(ids.data(), n, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR);
            });
            ArrayType* seq_array = nullptr;
            if (keys != nullptr) {
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
            Datum values[] = {PointerGetDatum(topic), PointerGetDatum(id_array), PointerGetDatum(keys),
                              PointerGetDatum(seq_array), PointerGetDatum(payloads)};
            const char nulls[] = {' ', ' ', keys ? ' ' : 'n', seq_array ? ' ' : 'n', ' '};
            {
                AsExtensionOwner owner;
                insert_many_plan.execute(values, nulls);
            }
            for (int i = 0; i < n; ++i)
                if (!seq_nulls[i]) outbox_key_order_sent(DatumGetTextPP(key_elems[i]), to_uuid(ids[i]), to_uuid(key_seqs[i]));
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

// ----------------------------------------------------------------------------- claim

namespace {

struct Watermark {
    bool valid = false;
    Uuid low{};
    TimestampTz refreshed = 0;
    TimestampTz full_refresh = 0;
};
Watermark watermark;

constexpr int64 kWatermarkStepUs = 100 * 1000;         // move forward at most every 100 ms
constexpr int64 kWatermarkFullUs = 10 * 1000 * 1000;  // recompute from scratch every 10 s

SavedPlan first_live_plan(
    "SELECT LEAST("
    "  (SELECT o.id FROM once.outbox o"
    "    WHERE o.pos IS NULL AND o.id OPERATOR(pg_catalog.>=) $1 ORDER BY o.id LIMIT 1),"
    "  (SELECT o.pos FROM once.outbox o"
    "    WHERE o.pos IS NOT NULL AND o.pos OPERATOR(pg_catalog.>=) $1 ORDER BY o.pos LIMIT 1))",
    {UUIDOID});

// Start of the oldest transaction of this database that holds an xid (it may commit rows
// whose positions lie in the past), or `now`.
TimestampTz oldest_writer_start(TimestampTz now) {
    return pg_call([&] {
        TimestampTz oldest = now;
        pgstat_clear_backend_activity_snapshot();
        int n = pgstat_fetch_stat_numbackends();
        for (int i = 1; i <= n; ++i) {
            LocalPgBackendStatus* e = pgstat_fetch_stat_local_beentry(i);
            if (e == nullptr || !TransactionIdIsValid(e->backend_xid)) continue;
            if (e->backendStatus.st_databaseid != MyDatabaseId) continue;
            TimestampTz start = e->backendStatus.st_xact_start_timestamp;
            if (start != 0 && start < oldest) oldest = start;
        }
        pgstat_clear_backend_activity_snapshot();
        return oldest;
    });
}

// A queue table's statistics are often stale (empty at the last ANALYZE, 100k rows now). The
// claim and watermark queries must walk their index in order and stop at LIMIT whatever the
// estimates say, so they run with bitmap scans, sequential scans and explicit sorts disabled,
// and without JIT (restored after).
class IndexOrderPlans {
public:
    IndexOrderPlans() {
        nest_level_ = pg_call([] {
            int level = NewGUCNestLevel();
            set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                              true, 0, false);
            set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                              false);
            set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true,
                              0, false);
            // the disabled paths' costs would otherwise trigger JIT compilation (~0.5 s)
            set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
            return level;
        });
    }
    // Called on success; after an error, (sub)transaction abort restores the settings.
    void restore() {
        int level = nest_level_;
        pg_call([&] { AtEOXact_GUC(true, level); });
    }

private:
    int nest_level_;
};

// The lowest position a claim must look at. Uuid{} (nil) means "from the start".
Uuid claim_low_watermark() {
    if (IsolationUsesXactSnapshot()) return Uuid{};  // old snapshot: rows committed since are unseen
    TimestampTz now = GetCurrentTimestamp();
    const bool full = !watermark.valid || now - watermark.full_refresh >= kWatermarkFullUs;
    if (!full && now - watermark.refreshed < kWatermarkStepUs) return watermark.low;

    // Read the clock and the writers before the table (whose snapshot is taken after): a row
    // missing from that snapshot belongs to a writer seen here or is positioned after `now`.
    TimestampTz oldest = oldest_writer_start(now);
    Uuid cap = uuid_v7_floor(static_cast<uint64_t>(unix_ms(oldest) - 1));
    Uuid from{};
    from[15] = 1;  // just above nil: dead letters (pos = nil) are never scanned
    if (!full) from = watermark.low;
    Datum values[] = {uuid_datum(from)};
    uint64 n;
    {
        IndexOrderPlans hints;
        {
            AsExtensionOwner owner;
            n = first_live_plan.execute(values, nullptr, 1);
        }
        hints.restore();
    }
    Uuid low = cap;
    Datum v;
    if (n == 1 && spi_value(0, 1, &v)) {
        Uuid first = to_uuid(v);
        if (first < low) low = first;
    }
    if (!full && low < watermark.low) low = watermark.low;  // never move back between full refreshes
    watermark.low = low;
    watermark.valid = true;
    watermark.refreshed = now;
    if (full) watermark.full_refresh = now;
    return low;
}

// Two scans, each ORDER BY + LIMIT + FOR UPDATE SKIP LOCKED on one index: the due messages
// that have a pos (delayed, retried, redriven, explicitly numbered: few) and the messages
// claimed in id order through the primary key; the first batch of both in claim order.
#define ONCE_CLAIM_FILTER(o)                                                                    \
    "  AND " o ".visible_at OPERATOR(pg_catalog.<=) pg_catalog.now()"                           \
    "  AND ($5::pg_catalog.text[] IS NULL OR once._outbox_topics_match($5, " o ".topic))"        \
    "  AND (" o ".key IS NULL OR NOT EXISTS ("                                                  \
    "        SELECT 1 FROM once.outbox e"                                                       \
    "         WHERE e.key OPERATOR(pg_catalog.=) " o ".key AND e.key IS NOT NULL"               \
    "           AND e.key_seq OPERATOR(pg_catalog.<) " o ".key_seq))"
#define ONCE_CLAIM_EXHAUSTED(o)                                                                 \
    o ".attempt OPERATOR(pg_catalog.>=) COALESCE("                                              \
    "  (SELECT p.max_attempts FROM once.outbox_topic_policies p"                                \
    "    WHERE p.topic OPERATOR(pg_catalog.=) " o ".topic), 25) AS exhausted"

SavedPlan claim_plan(
    "WITH moved AS ("
    "  SELECT b.ctid AS tid, b.pos AS sort, " ONCE_CLAIM_EXHAUSTED("b")
    "    FROM once.outbox b"
    "   WHERE b.pos IS NOT NULL"
    "     AND b.pos OPERATOR(pg_catalog.>=) $1 AND b.pos OPERATOR(pg_catalog.<) $2"
    ONCE_CLAIM_FILTER("b")
    "   ORDER BY b.pos LIMIT $3"
    "   FOR UPDATE OF b SKIP LOCKED),"
    " plain AS ("
    "  SELECT a.ctid AS tid, a.id AS sort, " ONCE_CLAIM_EXHAUSTED("a")
    "    FROM once.outbox a"
    "   WHERE a.pos IS NULL"
    "     AND a.id OPERATOR(pg_catalog.>=) $1 AND a.id OPERATOR(pg_catalog.<) $2"
    ONCE_CLAIM_FILTER("a")
    "   ORDER BY a.id LIMIT $3"
    "   FOR UPDATE OF a SKIP LOCKED),"
    // (rows of plain beyond the batch stay locked, untouched, until this transaction ends)
    " c AS (SELECT * FROM (SELECT * FROM moved UNION ALL SELECT * FROM plain) m"
    "        ORDER BY m.sort LIMIT $3),"
    " dead AS ("
    "  UPDATE once.outbox o"
    "     SET dead_at = pg_catalog.now(), visible_at = 'infinity',"
    "         pos = '00000000-0000-0000-0000-000000000000', relay = NULL,"
    "         last_error = COALESCE(o.last_error OPERATOR(pg_catalog.||) '; ', '')"
    "                      OPERATOR(pg_catalog.||) 'lease of attempt ' OPERATOR(pg_catalog.||)"
    "                      o.attempt::pg_catalog.text OPERATOR(pg_catalog.||) ' expired (last relay '"
    "                      OPERATOR(pg_catalog.||) COALESCE(o.relay, '?') OPERATOR(pg_catalog.||) ')'"
    "    FROM c WHERE o.ctid OPERATOR(pg_catalog.=) c.tid AND c.exhausted"
    "  RETURNING 1),"
    " u AS ("
    "  UPDATE once.outbox o"
    "     SET attempt = o.attempt OPERATOR(pg_catalog.+) 1, relay = $4,"
    "         visible_at = pg_catalog.now() OPERATOR(pg_catalog.+) $6"
    "    FROM c WHERE o.ctid OPERATOR(pg_catalog.=) c.tid AND NOT c.exhausted"
    "  RETURNING o.id, o.topic, o.key, o.payload, o.headers, o.attempt, o.created_at, c.sort)"
    " SELECT u.id, u.topic, u.key, u.payload, u.headers, u.attempt, u.created_at"
    "   FROM u ORDER BY u.sort",
    {UUIDOID, UUIDOID, INT4OID, TEXTOID, TEXTARRAYOID, INTERVALOID});

}  // namespace

ONCE_SQL_FUNCTION(once_claim) {
    text* relay = relay_arg(fcinfo, 0);
    if (PG_ARGISNULL(1))
        throw Error(ErrorCode::invalid_batch, "batch must not be NULL", {}, "Pass e.g. 100.");
    int32 batch = PG_GETARG_INT32(1);
    validate_batch(batch);
    interval_arg_ms(fcinfo, 2, "lease", 1, kMaxLeaseMs);
    ArrayType* topics = nullptr;
    if (!PG_ARGISNULL(3)) {
        topics = PG_GETARG_ARRAYTYPE_P(3);
        Datum* elems = nullptr;
        bool* nulls = nullptr;
        int n = 0;
        pg_call([&] { deconstruct_array(topics, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n); });
        if (n == 0)
            throw Error(ErrorCode::invalid_topic_pattern, "topics must not be an empty array", {},
                        "Pass NULL for every topic, or patterns such as '{order.>}'.");
        for (int i = 0; i < n; ++i) {
            if (nulls[i])
                throw Error(ErrorCode::invalid_topic_pattern, "topics must not contain NULL",
                            "Element " + std::to_string(i + 1) + " is NULL.");
            validate_topic_pattern(text_view(DatumGetTextPP(elems[i])));
        }
    }

    pg_call([&] { InitMaterializedSRF(fcinfo, 0); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    SpiSession spi;
    Uuid low = claim_low_watermark();
    // Positions up to the end of this millisecond: later ones are delayed messages.
    Uuid high = uuid_v7_floor(static_cast<uint64_t>(unix_ms(GetCurrentTimestamp()) + 1));
    Datum values[] = {uuid_datum(low), uuid_datum(high), Int32GetDatum(batch), PointerGetDatum(relay),
                      PointerGetDatum(topics), PG_GETARG_DATUM(2)};
    const char nulls[] = {' ', ' ', ' ', ' ', topics ? ' ' : 'n', ' '};
    uint64 n;
    {
        IndexOrderPlans hints;
        {
            AsExtensionOwner owner;
            n = claim_plan.execute(values, nulls);
        }
        hints.restore();
    }
    pg_call([&] {
        for (uint64 i = 0; i < n; ++i)
            tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
    });
    return (Datum)0;
}

// ----------------------------------------------------------------------------- ack / nack / extend

namespace {

SavedPlan ack_plan(
    "WITH d AS ("
    "  DELETE FROM once.outbox o"
    "   WHERE o.id OPERATOR(pg_catalog.=) ANY ($2) AND o.relay OPERATOR(pg_catalog.=) $1"
    "     AND o.dead_at IS NULL"
    "  RETURNING o.id, o.topic, o.key, o.payload, o.headers, o.attempt, o.created_at),"
    " h AS ("
    "  INSERT INTO once.outbox_delivered"
    "         (id, topic, key, payload, headers, attempt, created_at, relay, expires_at)"
    "  SELECT d.id, d.topic, d.key, d.payload, d.headers, d.attempt, d.created_at, $1,"
    "         pg_catalog.now() OPERATOR(pg_catalog.+) p.retention"
    "    FROM d JOIN once.outbox_topic_policies p ON p.topic OPERATOR(pg_catalog.=) d.topic"
    "   WHERE p.retention IS NOT NULL)"
    " SELECT pg_catalog.count(*)::pg_catalog.int4 FROM d",
    {TEXTOID, UUIDARRAYOID});

SavedPlan extend_plan(
    "UPDATE once.outbox o SET visible_at = pg_catalog.now() OPERATOR(pg_catalog.+) $3"
    " WHERE o.id OPERATOR(pg_catalog.=) ANY ($2) AND o.relay OPERATOR(pg_catalog.=) $1"
    "   AND o.dead_at IS NULL",
    {TEXTOID, UUIDARRAYOID, INTERVALOID});

SavedPlan nack_lookup_plan(
    "SELECT o.attempt, (o.relay OPERATOR(pg_catalog.=) $1 AND o.dead_at IS NULL) IS TRUE,"
    "       p.max_attempts,"
    "       (pg_catalog.date_part('epoch', p.backoff_base) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8,"
    "       (pg_catalog.date_part('epoch', p.backoff_max) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8"
    "  FROM once.outbox o"
    "  LEFT JOIN once.outbox_topic_policies p ON p.topic OPERATOR(pg_catalog.=) o.topic"
    " WHERE o.id OPERATOR(pg_catalog.=) $2"
    "   FOR UPDATE OF o",
    {TEXTOID, UUIDOID});

SavedPlan nack_retry_plan(
    "UPDATE once.outbox SET relay = NULL, last_error = $2, visible_at = $3, pos = $4"
    " WHERE id OPERATOR(pg_catalog.=) $1",
    {UUIDOID, TEXTOID, TIMESTAMPTZOID, UUIDOID});

SavedPlan nack_dead_plan(
    "UPDATE once.outbox SET relay = NULL, last_error = $2, dead_at = pg_catalog.now(),"
    "       visible_at = 'infinity', pos = '00000000-0000-0000-0000-000000000000'"
    " WHERE id OPERATOR(pg_catalog.=) $1",
    {UUIDOID, TEXTOID});

// The validated ids argument, or nullopt when it is empty (nothing to do).
std::optional<Datum> ids_array_datum(FunctionCallInfo fcinfo, int arg) {
    if (ids_arg(fcinfo, arg).empty()) return std::nullopt;
    return PG_GETARG_DATUM(arg);
}

}  // namespace

ONCE_SQL_FUNCTION(once_ack) {
    text* relay = relay_arg(fcinfo, 0);
    std::optional<Datum> ids = ids_array_datum(fcinfo, 1);
    if (!ids) PG_RETURN_INT32(0);
    Datum values[] = {PointerGetDatum(relay), *ids};
    SpiSession spi;
    AsExtensionOwner owner;
    ack_plan.execute(values, nullptr);
    Datum v;
    int32 acked = spi_value(0, 1, &v) ? DatumGetInt32(v) : 0;
    PG_RETURN_INT32(acked);
}

ONCE_SQL_FUNCTION(once_extend) {
    text* relay = relay_arg(fcinfo, 0);
    std::optional<Datum> ids = ids_array_datum(fcinfo, 1);
    interval_arg_ms(fcinfo, 2, "lease", 1, kMaxLeaseMs);
    if (!ids) PG_RETURN_INT32(0);
    Datum values[] = {PointerGetDatum(relay), *ids, PG_GETARG_DATUM(2)};
    SpiSession spi;
    AsExtensionOwner owner;
    PG_RETURN_INT32(static_cast<int32>(extend_plan.execute(values, nullptr)));
}

namespace {

// once.nack and once.dead: give a claimed message back. A retry is scheduled by the topic's
// policy (or retry_after) unless `permanent` (the sink refused it for good: HTTP 4xx, inbox
// poison) or the attempts are used up; then it is dead at once. A relay that no longer holds
// the lease changes nothing and is told "stale".
Datum give_back(FunctionCallInfo fcinfo, bool permanent) {
    text* relay = relay_arg(fcinfo, 0);
    if (PG_ARGISNULL(1))
        throw Error(ErrorCode::invalid_message_ids, "id must not be NULL", {},
                    "Pass an id returned by once.claim.");
    Datum id = PG_GETARG_DATUM(1);
    std::optional<int64_t> retry_after;
    if (!permanent && !PG_ARGISNULL(3))
        retry_after = interval_arg_ms(fcinfo, 3, "retry_after", 0, kMaxRetryAfterMs);
    Datum error = PG_ARGISNULL(2) ? 0 : PG_GETARG_DATUM(2);

    const char* outcome;
    {
        SpiSession spi;
        AsExtensionOwner owner;
        Datum values[] = {PointerGetDatum(relay), id};
        if (nack_lookup_plan.execute(values, nullptr, 1) != 1)
            throw Error(ErrorCode::message_not_found, "message " + uuid_text(id) + " is not in the outbox",
                        "It was acknowledged (perhaps by a relay that took over its lease), "
                        "discarded, or never sent.",
                        "Do not retry it: nothing is left to deliver.");
        Datum v;
        const int attempt = spi_value(0, 1, &v) ? DatumGetInt32(v) : 0;
        const bool held = spi_value(0, 2, &v) && DatumGetBool(v);
        if (!held) {
            outcome = "stale";
        } else {
            RetryPolicy policy;
            if (spi_value(0, 3, &v)) policy.max_attempts = DatumGetInt32(v);
            if (spi_value(0, 4, &v)) policy.backoff.base_ms = DatumGetInt64(v);
            if (spi_value(0, 5, &v)) policy.backoff.cap_ms = DatumGetInt64(v);
            NackDecision d = decide_nack(policy, attempt, retry_after, uniform01());
            const char error_null = error ? ' ' : 'n';
            if (permanent || d.dead) {
                Datum args[] = {id, error};
                const char nulls[] = {' ', error_null};
                nack_dead_plan.execute(args, nulls);
                outcome = "dead";
            } else {
                TimestampTz visible = GetCurrentTransactionStartTimestamp() + d.delay_ms * 1000;
                Uuid pos = uuid_v7_at(static_cast<uint64_t>(unix_ms(GetCurrentTimestamp()) + d.delay_ms),
                                      random10());
                Datum args[] = {id, error, TimestampTzGetDatum(visible), uuid_datum(pos)};
                const char nulls[] = {' ', error_null, ' ', ' '};
                nack_retry_plan.execute(args, nulls);
                outcome = "retry";
            }
        }
    }
    return text_datum(outcome);
}

}  // namespace

ONCE_SQL_FUNCTION(once_nack) { return give_back(fcinfo, false); }

ONCE_SQL_FUNCTION(once_dead) { return give_back(fcinfo, true); }

// ----------------------------------------------------------------------------- helpers

ONCE_SQL_FUNCTION(once_outbox_topics_match) {
    ArrayType* patterns = PG_GETARG_ARRAYTYPE_P(0);
    text* topic = PG_GETARG_TEXT_PP(1);
    Datum* elems = nullptr;
    bool* nulls = nullptr;
    int n = 0;
    pg_call([&] { deconstruct_array(patterns, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n); });
    for (int i = 0; i < n; ++i)
        if (!nulls[i] && topic_matches(text_view(DatumGetTextPP(elems[i])), text_view(topic))) PG_RETURN_BOOL(true);
    PG_RETURN_BOOL(false);
}

ONCE_SQL_FUNCTION(once_outbox_position) {
    TimestampTz at = PG_GETARG_TIMESTAMPTZ(0);
    if (TIMESTAMP_NOT_FINITE(at)) throw Error(ErrorCode::invalid_interval, "position time must be finite");
    pg_call([] { (void)GetCurrentTransactionId(); });  // the writer is visible to claims first
    return uuid_datum(uuid_v7_at(static_cast<uint64_t>(unix_ms(at)), random10()));
}

ONCE_SQL_FUNCTION(once_outbox_validate_policy) {
    text* topic = topic_arg(fcinfo, 0);
    (void)topic;
    RetryPolicy policy;
    if (PG_ARGISNULL(1)) throw Error(ErrorCode::invalid_policy, "max_attempts must not be NULL");
    policy.max_attempts = PG_GETARG_INT32(1);
    if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
        throw Error(ErrorCode::invalid_policy, "backoff_base and backoff_max must not be NULL");
    policy.backoff.base_ms = interval_ms(PG_GETARG_INTERVAL_P(2), "backoff_base", ErrorCode::invalid_policy);
    policy.backoff.cap_ms = interval_ms(PG_GETARG_INTERVAL_P(3), "backoff_max", ErrorCode::invalid_policy);
    validate_policy(policy);
    if (!PG_ARGISNULL(4) && interval_ms(PG_GETARG_INTERVAL_P(4), "retention", ErrorCode::invalid_policy) <= 0)
        throw Error(ErrorCode::invalid_policy, "retention must be positive or NULL",
                    {}, "Pass NULL to keep no delivered history.");
    PG_RETURN_VOID();
}
