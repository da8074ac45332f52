// The outbox entry points' shared helpers: outbox_args.hpp.
#include "pg/outbox/outbox_args.hpp"

#include "core/content_type.hpp"
#include "core/message_headers.hpp"
#include "core/outbox_policy.hpp"
#include "core/topic.hpp"
#include "pg/common/text_args.hpp"

extern "C" {
#include "access/detoast.h"
#include "utils/array.h"
}

#include <algorithm>
#include <cstring>

namespace once::pg {
namespace {

UuidV7Generator& generator() {
    static UuidV7Generator g;
    return g;
}

}  // namespace

// pg_strong_random is OpenSSL's RAND behind a lock and a fork check: drawn 64 ids' worth at a
// time. (The buffer is per backend and starts empty, so no two processes share its bytes.)
std::array<uint8_t, 10> random10() {
    static std::array<uint8_t, 640> pool;
    static size_t used = pool.size();
    if (used == pool.size()) {
        if (!pg_strong_random(pool.data(), pool.size()))
            throw Error(ErrorCode::internal, "could not generate random bytes for a message id");
        used = 0;
    }
    std::array<uint8_t, 10> r{};
    std::copy_n(pool.begin() + used, r.size(), r.begin());
    used += r.size();
    return r;
}

double uniform01() {
    uint64_t v = 0;
    if (!pg_strong_random(&v, sizeof v)) throw Error(ErrorCode::internal, "could not generate random bytes");
    return static_cast<double>(v >> 11) / 9007199254740992.0;  // 53 bits -> [0, 1)
}

Uuid next_id() { return generator().next(static_cast<uint64_t>(unix_ms(GetCurrentTimestamp())), random10()); }

// (One draw for a whole send_many: a call per message was a tenth of its CPU time.)
std::vector<Uuid> next_ids(int n) {
    std::vector<uint8_t> bytes(static_cast<size_t>(n) * 10);
    if (n > 0 && !pg_strong_random(bytes.data(), bytes.size()))
        throw Error(ErrorCode::internal, "could not generate random bytes for message ids");
    const uint64_t ms = static_cast<uint64_t>(unix_ms(GetCurrentTimestamp()));
    std::vector<Uuid> ids(n);
    std::array<uint8_t, 10> r{};
    for (int i = 0; i < n; ++i) {
        std::copy_n(bytes.begin() + i * 10, 10, r.begin());
        ids[i] = generator().next(ms, r);
    }
    return ids;
}

// Milliseconds of an interval argument; one too large for 64-bit microseconds is an error
// `code` naming it (never a wrapped-around number).
int64 interval_ms(const Interval* i, const char* name, ErrorCode code) {
    std::optional<int64_t> ms = applied_interval_ms(i);
    if (!ms)
        throw Error(code, std::string(name) + " is out of range",
                    "now() + " + std::string(name) + " is not a finite timestamp.",
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
Jsonb* checked_payload(Datum raw, const std::string& what, int64 headers_bytes) {
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

text* content_type_arg(FunctionCallInfo fcinfo, int arg) {
    if (PG_ARGISNULL(arg)) return nullptr;
    text* content_type = PG_GETARG_TEXT_PP(arg);
    if (std::optional<std::string> why = content_type_error(text_view(content_type)))
        throw Error(ErrorCode::invalid_content_type, "invalid content_type: " + *why, {},
                    "Pass a media type such as 'application/xml' or 'text/plain; charset=utf-8', or NULL "
                    "for application/json.");
    return content_type;
}

void check_payload_for_content_type(text* content_type, Jsonb* payload, const std::string& what) {
    if (content_type == nullptr || is_json_content_type(text_view(content_type))) return;
    const bool is_string = pg_call([&] {
        if (!JB_ROOT_IS_SCALAR(payload)) return false;
        JsonbValue* v = getIthJsonbValueFromContainer(&payload->root, 0);
        return v != nullptr && v->type == jbvString;
    });
    if (!is_string)
        throw Error(ErrorCode::invalid_content_type,
                    what + " must be a JSON string under content_type " + std::string(text_view(content_type)),
                    "The sinks send the string's value as the body of a non-JSON content type.",
                    "Pass the document as a JSON string, e.g. to_jsonb('<order/>'::text), or a JSON content type.");
}

Jsonb* headers_arg(FunctionCallInfo fcinfo, int arg, Json* parsed_out) {
    if (PG_ARGISNULL(arg)) return nullptr;
    Jsonb* headers = PG_GETARG_JSONB_P(arg);
    if (JB_ROOT_IS_SCALAR(headers) || !JB_ROOT_IS_OBJECT(headers))
        throw Error(ErrorCode::invalid_headers, "headers must be a JSON object",
                    JB_ROOT_IS_ARRAY(headers) && !JB_ROOT_IS_SCALAR(headers) ? "headers was an array."
                                                                            : "headers was a scalar.",
                    "Pass an object such as '{\"traceparent\": \"00-...\"}' or NULL.");
    // The relay copies headers onto the HTTP request and the NATS message: refuse here what
    // it would drop there (core/message_headers.hpp), so that the producer learns it at once.
    std::vector<std::pair<std::string, std::string>> pairs;
    Json parsed = Json::parse(jsonb_text(PointerGetDatum(headers)));
    for (const Json::Member& m : parsed.members())
        pairs.emplace_back(m.first, m.second.is_string() ? m.second.as_string() : m.second.dump());
    HeaderSelection selection = select_headers(pairs);
    if (!selection.refused.empty()) {
        const RefusedHeader& r = selection.refused.front();
        std::string shown = r.name.substr(0, 64);
        for (char& c : shown)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
        throw Error(ErrorCode::reserved_header, "header \"" + shown + "\" may not be sent with a message",
                    r.reason + ".",
                    "Transport and relay headers (Host, Content-Length, Idempotency-Key, X-Once-*, Nats-*, "
                    "webhook-*, ...) are set by the relay; name your own header differently (docs/security.md).");
    }
    if (parsed_out != nullptr) *parsed_out = std::move(parsed);
    return headers;
}

std::vector<Datum> message_ids(ArrayType* array, bool allow_empty, const char* hint) {
    if (array == nullptr) throw Error(ErrorCode::invalid_message_ids, "ids must not be NULL", "ids is NULL.", hint);
    Datum* elems = nullptr;
    bool* nulls = nullptr;
    int n = 0;
    pg_call([&] { deconstruct_array(array, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR, &elems, &nulls, &n); });
    if (n == 0 && !allow_empty)
        throw Error(ErrorCode::invalid_message_ids, "ids must not be empty", "ids is an empty array.", hint);
    if (n > kMaxClaimBatch)
        throw Error(ErrorCode::invalid_message_ids, "too many ids",
                    std::to_string(n) + " ids; the limit is " + std::to_string(kMaxClaimBatch) + ".",
                    "Split them into several calls.");
    for (int i = 0; i < n; ++i)
        if (nulls[i])
            throw Error(ErrorCode::invalid_message_ids, "ids must not contain NULL",
                        "Element " + std::to_string(i + 1) + " is NULL.", hint);
    return std::vector<Datum>(elems, elems + n);
}

// (an empty batch is normal in a relay's loop: ack(relay, ARRAY(SELECT id FROM claim(...))))
std::vector<Datum> ids_arg(FunctionCallInfo fcinfo, int arg) {
    return message_ids(PG_ARGISNULL(arg) ? nullptr : PG_GETARG_ARRAYTYPE_P(arg), true,
                       "Pass the ids returned by once.claim.");
}

ArrayType* topic_patterns_arg(FunctionCallInfo fcinfo, int arg) {
    if (PG_ARGISNULL(arg)) return nullptr;
    ArrayType* topics = PG_GETARG_ARRAYTYPE_P(arg);
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
    return topics;
}

}  // namespace once::pg
