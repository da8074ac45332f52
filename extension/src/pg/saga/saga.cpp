// The saga engine's PostgreSQL entry points. The decisions are made by pure C++
// (core/saga_machine.hpp), called directly; loading, locking, storing and sending commands
// through the outbox happen in saga_store.cpp with saved plans, inside the caller's
// transaction, so a decision and its effects commit or roll back together.
#include "core/error.hpp"
#include "core/saga_definition.hpp"
#include "core/saga_machine.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/text_args.hpp"
#include "pg/saga/saga_store.hpp"

#include <string>

namespace once::pg {
namespace {

std::string arg_text(FunctionCallInfo fcinfo, int i, const char* what) {
    if (PG_ARGISNULL(i)) throw Error(ErrorCode::invalid_argument, std::string(what) + " must not be NULL");
    return std::string(text_view(PG_GETARG_TEXT_PP(i)));
}

saga::Definition stored_definition(FunctionCallInfo fcinfo, int i) {
    if (PG_ARGISNULL(i)) throw Error(ErrorCode::internal, "saga definition is NULL");
    return saga::from_normalized(Json::parse(jsonb_text(PG_GETARG_DATUM(i))));
}

saga::Event parse_event(const Json& j) {
    saga::Event e;
    auto str = [&](const char* k) { const Json* v = j.find(k); return v && v->is_string() ? v->as_string() : std::string(); };
    const std::string type = str("type");
    if (type == "start") e.type = saga::Event::Type::start;
    else if (type == "reply") e.type = saga::Event::Type::reply;
    else if (type == "deadline") e.type = saga::Event::Type::deadline;
    else if (type == "retry") e.type = saga::Event::Type::retry;
    else if (type == "abort") e.type = saga::Event::Type::abort;
    else throw Error(ErrorCode::internal, "unknown saga event type \"" + type + "\"");
    e.step = str("step");
    if (e.type == saga::Event::Type::reply) e.outcome = saga::parse_outcome(str("outcome"));
    e.reason = str("reason");
    return e;
}

text* nullable_text(FunctionCallInfo fcinfo, int i) {
    return PG_ARGISNULL(i) ? nullptr : PG_GETARG_TEXT_PP(i);
}

Datum nullable_datum(FunctionCallInfo fcinfo, int i) { return PG_ARGISNULL(i) ? Datum(0) : PG_GETARG_DATUM(i); }

// The value of `key` in a jsonb object, or nullptr when absent or not an object.
JsonbValue* object_field(Jsonb* jb, const char* key) {
    if (!JB_ROOT_IS_OBJECT(jb)) return nullptr;
    JsonbValue k;
    k.type = jbvString;
    k.val.string.val = const_cast<char*>(key);
    k.val.string.len = static_cast<int>(strlen(key));
    return findJsonbValueFromContainer(&jb->root, JB_FOBJECT, &k);
}

// object->>key: the string itself, other values as JSON text, nullptr for absent or null.
char* field_text(Datum object, const char* key) {
    return pg_call([&]() -> char* {
        JsonbValue* v = object_field(DatumGetJsonbP(object), key);
        if (v == nullptr || v->type == jbvNull) return nullptr;
        if (v->type == jbvString) return pnstrdup(v->val.string.val, v->val.string.len);
        Jsonb* value = JsonbValueToJsonb(v);
        return JsonbToCString(nullptr, &value->root, VARSIZE(value));
    });
}

// output->>'error' when output is an object: a failed step's reason.
std::string output_error(Datum output) {
    char* reason = output == 0 ? nullptr : field_text(output, "error");
    return reason ? std::string(reason) : std::string();
}

text* text_of(const char* s) { return pg_call([&] { return cstring_to_text(s); }); }

}  // namespace
}  // namespace once::pg

using namespace once;
using namespace once::pg;

// once._saga_compile(name text, definition jsonb) returns jsonb: the normalised definition.
ONCE_SQL_FUNCTION(once_saga_compile) {
    std::string name = arg_text(fcinfo, 0, "saga name");
    if (PG_ARGISNULL(1))
        throw Error(ErrorCode::saga_invalid_definition, "invalid saga definition: definition must not be NULL",
                    {}, "Pass a jsonb object with a \"steps\" array.");
    std::string source = jsonb_text(PG_GETARG_DATUM(1));
    saga::Definition d = saga::parse_definition(name, source);
    return jsonb_datum(saga::to_json(d).dump());
}

// once._saga_diagram(name text, definition jsonb) returns text.
ONCE_SQL_FUNCTION(once_saga_diagram) {
    std::string name = arg_text(fcinfo, 0, "saga name");
    saga::Definition d = stored_definition(fcinfo, 1);
    return text_datum(saga::mermaid_diagram(name, d));
}

// once.saga_start(name text, saga_id text, input jsonb default '{}') returns text.
ONCE_SQL_FUNCTION(once_saga_start) {
    text* name = nullable_text(fcinfo, 0);
    if (name == nullptr)
        throw Error(ErrorCode::saga_not_found, "saga definition not found", "The saga name was NULL.",
                    "Define it first with once.saga_define.");
    text* saga_id = nullable_text(fcinfo, 1);
    saga_store::start(name, saga_id, nullable_datum(fcinfo, 2));
    PG_RETURN_TEXT_P(saga_id);
}

// once.saga_reply(saga_id text, step text, outcome text, output jsonb, message_id text, name text)
// returns text: applied, duplicate, late or rejected. name: the saga's definition (NULL: by id).
ONCE_SQL_FUNCTION(once_saga_reply) {
    if (PG_ARGISNULL(1) || PG_ARGISNULL(2)) {
        auto shown = [&](int i) {
            return PG_ARGISNULL(i) ? std::string("NULL") : "'" + std::string(text_view(PG_GETARG_TEXT_PP(i))) + "'";
        };
        throw Error(ErrorCode::saga_invalid_reply, "saga reply needs a step and an outcome",
                    "step was " + shown(1) + ", outcome was " + shown(2) + ".",
                    "Outcomes: succeeded, failed, compensated, compensation_failed.");
    }
    saga::Event e;
    e.type = saga::Event::Type::reply;
    e.step = std::string(text_view(PG_GETARG_TEXT_PP(1)));
    e.outcome = saga::parse_outcome(text_view(PG_GETARG_TEXT_PP(2)));
    Datum output = nullable_datum(fcinfo, 3);
    e.reason = output_error(output);
    saga_store::Applied a = saga_store::apply(nullable_text(fcinfo, 0), nullable_text(fcinfo, 5), e, output,
                                              nullable_text(fcinfo, 4));
    return text_datum(saga::reply_result_name(a.result));
}

// once._saga_apply(saga_id text, event jsonb, output jsonb, message_id text, name text) returns jsonb
// {"result", "status", "step"}: the events that have no entry point of their own (retry,
// abort, and those of saga_tick).
ONCE_SQL_FUNCTION(once_saga_apply) {
    if (PG_ARGISNULL(1)) throw Error(ErrorCode::internal, "saga event is NULL");
    saga::Event e = parse_event(Json::parse(jsonb_text(PG_GETARG_DATUM(1))));
    saga_store::Applied a = saga_store::apply(nullable_text(fcinfo, 0), nullable_text(fcinfo, 4), e,
                                              nullable_datum(fcinfo, 2), nullable_text(fcinfo, 3));
    Json out = Json::object();
    out.set("result", Json::string(saga::reply_result_name(a.result)));
    out.set("status", Json::string(a.status));
    out.set("step", Json::string(a.step));
    return jsonb_datum(out.dump());
}

// once.saga_reply_handler(msg once.inbound): the built-in inbox handler for replies arriving
// through a relay. Payload: {"saga_id": ..., "step": ..., "outcome": ..., "output": {...},
// "saga": ...} (output optional, output.error carries the failure reason; saga optional, the
// definition's name as the command carried it, needed when several definitions have the id). The inbox message id makes a
// redelivered reply a duplicate.
ONCE_SQL_FUNCTION(once_saga_reply_handler) {
    if (PG_ARGISNULL(0))
        throw Error(ErrorCode::saga_invalid_reply, "malformed saga reply", "The message was NULL.",
                    "A reply is {\"saga_id\": ..., \"step\": ..., \"outcome\": ..., \"output\": {...}}.");
    HeapTupleHeader msg = PG_GETARG_HEAPTUPLEHEADER(0);
    bool payload_null = true, id_null = true;
    Datum payload = pg_call([&] { return GetAttributeByName(msg, "payload", &payload_null); });
    Datum message_id = pg_call([&] { return GetAttributeByName(msg, "message_id", &id_null); });
    char* saga_id = payload_null ? nullptr : field_text(payload, "saga_id");
    char* step = payload_null ? nullptr : field_text(payload, "step");
    char* outcome = payload_null ? nullptr : field_text(payload, "outcome");
    char* saga_name = payload_null ? nullptr : field_text(payload, "saga");  // optional: the definition
    if (saga_id == nullptr || step == nullptr || outcome == nullptr) {
        std::string shown = payload_null ? std::string("NULL") : jsonb_text(payload).substr(0, 200);
        std::string id = id_null ? std::string("NULL") : std::string(text_view(DatumGetTextPP(message_id)));
        throw Error(ErrorCode::saga_invalid_reply, "malformed saga reply", "Message " + id + " payload: " + shown,
                    "A reply is {\"saga_id\": ..., \"step\": ..., \"outcome\": ..., \"output\": {...}}.");
    }
    Datum output = pg_call([&]() -> Datum {
        JsonbValue* v = object_field(DatumGetJsonbP(payload), "output");
        if (v == nullptr || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data)) return 0;
        return JsonbPGetDatum(JsonbValueToJsonb(v));
    });
    saga::Event e;
    e.type = saga::Event::Type::reply;
    e.step = step;
    e.outcome = saga::parse_outcome(outcome);
    e.reason = output_error(output);
    saga_store::apply(text_of(saga_id), saga_name ? text_of(saga_name) : nullptr, e, output,
                      id_null ? nullptr : DatumGetTextPP(message_id));
    PG_RETURN_VOID();
}

// once._saga_decide existed in 0.1 (the jsonb round trip the entry points above replaced).
// The symbol stays so that this library can still install 0.1 (CREATE EXTENSION ... VERSION
// '0.1', then ALTER EXTENSION UPDATE); it is never served: 0.1's objects get ON001 first.
ONCE_SQL_FUNCTION(once_saga_decide) {
    throw Error(ErrorCode::internal, "once._saga_decide was removed in pg_once 0.2", {},
                "Run ALTER EXTENSION pg_once UPDATE.");
}
