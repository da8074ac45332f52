// The saga engine's PostgreSQL boundary. The decisions are made by pure C++
// (core/saga_machine.hpp); these three functions hand it the stored definition, the stored
// state and the event as jsonb and return its decision as jsonb. Storage, locking and sending
// commands through the outbox happen in SQL (sql/src/40_saga.sql), inside the caller's
// transaction, so a decision and its effects commit or roll back together.
#include "../core/error.hpp"
#include "../core/saga_definition.hpp"
#include "../core/saga_machine.hpp"
#include "guard.hpp"
#include "text_args.hpp"

#include <string>

namespace once::pg {
namespace {

std::string jsonb_text(Jsonb* jb) {
    char* s = pg_call([&] { return JsonbToCString(nullptr, &jb->root, VARSIZE(jb)); });
    std::string out(s);
    pg_call([&] { pfree(s); });
    return out;
}

Datum jsonb_datum(const std::string& text) {
    return pg_call([&] { return DirectFunctionCall1(jsonb_in, CStringGetDatum(text.c_str())); });
}

std::string arg_text(FunctionCallInfo fcinfo, int i, const char* what) {
    if (PG_ARGISNULL(i)) throw Error(ErrorCode::invalid_argument, std::string(what) + " must not be NULL");
    return std::string(text_view(PG_GETARG_TEXT_PP(i)));
}

saga::Definition stored_definition(FunctionCallInfo fcinfo, int i) {
    if (PG_ARGISNULL(i)) throw Error(ErrorCode::internal, "saga definition is NULL");
    return saga::from_normalized(Json::parse(jsonb_text(PG_GETARG_JSONB_P(i))));
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
    if (const Json* n = j.find("now_ms"); n && n->is_number()) e.now_ms = static_cast<int64_t>(n->as_number());
    if (const Json* r = j.find("random"); r && r->is_number()) e.random01 = r->as_number();
    return e;
}

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
    std::string source = jsonb_text(PG_GETARG_JSONB_P(1));
    saga::Definition d = saga::parse_definition(name, source);
    return jsonb_datum(saga::to_json(d).dump());
}

// once._saga_decide(definition jsonb, state jsonb, event jsonb) returns jsonb.
ONCE_SQL_FUNCTION(once_saga_decide) {
    saga::Definition d = stored_definition(fcinfo, 0);
    if (PG_ARGISNULL(2)) throw Error(ErrorCode::internal, "saga event is NULL");
    saga::Event e = parse_event(Json::parse(jsonb_text(PG_GETARG_JSONB_P(2))));
    saga::State s;
    if (e.type != saga::Event::Type::start) {
        if (PG_ARGISNULL(1)) throw Error(ErrorCode::internal, "saga state is NULL");
        s = saga::state_from_json(Json::parse(jsonb_text(PG_GETARG_JSONB_P(1))), d);
    }
    saga::Decision dec = saga::decide(d, s, e);

    Json out = Json::object();
    Json machine = saga::to_json(dec.state, d);
    out.set("status", Json::string(saga::status_name(dec.state.status)));
    out.set("step", Json::string(d.steps[dec.state.cursor].name));
    out.set("attempts", Json::number(dec.state.attempts));
    out.set("deadline_ms", dec.state.deadline_ms ? Json::number(static_cast<double>(dec.state.deadline_ms)) : Json::null());
    out.set("reason", dec.state.reason.empty() ? Json::null() : Json::string(dec.state.reason));
    out.set("machine", std::move(machine));
    Json commands = Json::array();
    for (const auto& c : dec.commands) {
        Json j = Json::object();
        j.set("step", Json::string(d.steps[c.step].name));
        j.set("compensate", Json::boolean(c.compensate));
        j.set("topic", Json::string(c.topic));
        j.set("attempt", Json::number(c.attempt));
        commands.push(std::move(j));
    }
    out.set("commands", std::move(commands));
    Json history = Json::array();
    for (const auto& t : dec.history) {
        Json j = Json::object();
        j.set("from", Json::string(t.from));
        j.set("to", Json::string(t.to));
        j.set("step", Json::string(t.step));
        j.set("event", Json::string(t.event));
        j.set("reason", t.reason.empty() ? Json::null() : Json::string(t.reason));
        history.push(std::move(j));
    }
    out.set("history", std::move(history));
    out.set("result", Json::string(saga::reply_result_name(dec.result)));
    out.set("merge_output", Json::boolean(dec.merge_output));
    out.set("reply_to", Json::string(d.reply_to));
    return jsonb_datum(out.dump());
}

// once._saga_diagram(name text, definition jsonb) returns text.
ONCE_SQL_FUNCTION(once_saga_diagram) {
    std::string name = arg_text(fcinfo, 0, "saga name");
    saga::Definition d = stored_definition(fcinfo, 1);
    return text_datum(saga::mermaid_diagram(name, d));
}
