#include "pg/saga/saga_store.hpp"

#include "core/error.hpp"
#include "core/saga_definition.hpp"
#include "pg/common/spi.hpp"
#include "pg/common/text_args.hpp"
#include "pg/common/trace_context.hpp"
#include "pg/outbox/outbox_key_order.hpp"
#include "pg/saga/saga_start_grants.hpp"

extern "C" {
#include "access/xact.h"
#include "common/pg_prng.h"
#include "datatype/timestamp.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
}

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace once::pg::saga_store {
namespace {

// ------------------------------------------------------------------------ statements

SavedPlan lock_plan(
    "SELECT s.name, s.data, s.machine, s.status, s.deadline, d.definition, s.version, s.step, s.traceparent,"
    "       COALESCE(s.started_by, 0)"
    "  FROM once.saga_instances s"
    "  JOIN once.saga_definitions d"
    "    ON d.name OPERATOR(pg_catalog.=) s.name AND d.version OPERATOR(pg_catalog.=) s.version"
    " WHERE s.saga_id OPERATOR(pg_catalog.=) $1"
    "   AND ($2::pg_catalog.text IS NULL OR s.name OPERATOR(pg_catalog.=) $2)"
    "   FOR UPDATE OF s",
    {TEXTOID, TEXTOID});

SavedPlan reply_seen_plan(
    "INSERT INTO once.saga_replies (saga_id, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    {TEXTOID, TEXTOID});

SavedPlan latest_definition_plan(
    "SELECT d.version, d.definition FROM once.saga_definitions d"
    " WHERE d.name OPERATOR(pg_catalog.=) $1 ORDER BY d.version DESC LIMIT 1",
    {TEXTOID});

SavedPlan insert_plan(
    "INSERT INTO once.saga_instances AS s (saga_id, name, version, input, data, machine, status, step,"
    "                                      attempts, deadline, started_by, traceparent)"
    " VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8, $9, $10, $11)"
    " ON CONFLICT ON CONSTRAINT saga_instances_pkey DO NOTHING"
    " RETURNING s.data",
    {TEXTOID, TEXTOID, INT4OID, JSONBOID, JSONBOID, TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID, OIDOID, TEXTOID});

SavedPlan existing_plan(
    "SELECT s.name OPERATOR(pg_catalog.=) $2 AND s.input OPERATOR(pg_catalog.=) $3,"
    "       s.name, pg_catalog.left(s.input::pg_catalog.text, 200)"
    "  FROM once.saga_instances s"
    " WHERE s.saga_id OPERATOR(pg_catalog.=) $1 AND s.name OPERATOR(pg_catalog.=) $2",
    {TEXTOID, TEXTOID, JSONBOID});

SavedPlan update_plan(
    "UPDATE once.saga_instances s"
    "   SET data = CASE WHEN $2 THEN s.data OPERATOR(pg_catalog.||)"
    "                                ($3 OPERATOR(pg_catalog.-) 'error'::pg_catalog.text)"
    "                   ELSE s.data END,"
    "       machine = $4, status = $5, step = $6, attempts = $7, deadline = $8, last_error = $9,"
    "       updated_at = pg_catalog.now(),"
    "       finished_at = CASE WHEN $10 THEN pg_catalog.now() END, failure_cause = $11"
    " WHERE s.saga_id OPERATOR(pg_catalog.=) $1 AND s.name OPERATOR(pg_catalog.=) $12"
    " RETURNING s.data",
    {TEXTOID, BOOLOID, JSONBOID, JSONBOID, TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID, TEXTOID, BOOLOID, TEXTOID,
     TEXTOID});

SavedPlan transition_plan(
    "INSERT INTO once.saga_transitions (saga_id, from_status, to_status, step, event, reason, message_id, name)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID});

// key = saga id: the outbox keeps a saga's commands in send order, so a compensation never
// overtakes the action it undoes. Per-key order is per role (pg/outbox/outbox_key_order.hpp):
// whoever drives the saga (saga_start, a reply, saga_tick), its commands join the order of the role
// that started it (key_owner = started_by; 0 for sagas started before 0.3, whose earlier
// commands have owner 0), so another role's saga with the same id cannot hold them back. Header values are strings (HTTP, NATS). $10: the command's
// traceparent, a child of the saga's (NULL: the saga was not started under a trace).
SavedPlan send_plan(
    "SELECT once.send($1,"
    "    pg_catalog.jsonb_build_object('saga_id'::pg_catalog.text, $2, 'step'::pg_catalog.text, $3,"
    "                                  'data'::pg_catalog.text, $4, 'saga'::pg_catalog.text, $6),"
    "    $2,"
    "    pg_catalog.jsonb_build_object('idempotency_key'::pg_catalog.text, $5, 'saga'::pg_catalog.text, $6,"
    "                                  'reply_to'::pg_catalog.text, $7, 'compensate'::pg_catalog.text, $8,"
    "                                  'attempt'::pg_catalog.text, $9)"
    "    OPERATOR(pg_catalog.||) CASE WHEN $10 IS NULL THEN '{}'::pg_catalog.jsonb"
    "                            ELSE pg_catalog.jsonb_build_object('traceparent'::pg_catalog.text, $10) END)",
    {TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID});

// -------------------------------------------------------------------------- helpers

std::string spi_string(int column) {
    Datum value;
    if (!spi_value(0, column, &value)) return {};
    return std::string(text_view(DatumGetTextPP(value)));
}

// 'value' quoted as a SQL literal, cut to `chars` characters (for error details).
std::string quoted(std::string_view value, int chars) {
    int len = pg_call([&] { return pg_mbcharcliplen(value.data(), static_cast<int>(value.size()), chars); });
    std::string cut(value.substr(0, static_cast<size_t>(len)));
    const char* cut_c = cut.c_str();
    return std::string(pg_call([&] { return quote_literal_cstr(cut_c); }));
}

Datum text_or_null(const std::string& s, char* null_flag) {
    *null_flag = s.empty() ? 'n' : ' ';
    return s.empty() ? Datum(0) : text_datum(s);
}

// Definitions never change once stored (a change is a new version), so the parsed form is
// kept per backend. The stored bytes are compared on every use, so a definition deleted and
// stored again under the same name and version (DROP EXTENSION, restore) is parsed again.
struct CachedDefinition {
    std::string stored;  // the jsonb's bytes
    std::shared_ptr<const saga::Definition> definition;
};
std::map<std::string, CachedDefinition>& definition_cache() {
    static std::map<std::string, CachedDefinition> cache;
    return cache;
}

std::shared_ptr<const saga::Definition> definition_of(const std::string& name, int32 version, Datum stored) {
    struct varlena* raw = pg_call([&] { return PG_DETOAST_DATUM_PACKED(stored); });
    std::string bytes(VARDATA_ANY(raw), VARSIZE_ANY_EXHDR(raw));
    std::string key = name + '\n' + std::to_string(version);
    auto& cache = definition_cache();
    auto it = cache.find(key);
    if (it != cache.end() && it->second.stored == bytes) return it->second.definition;
    auto parsed = std::make_shared<const saga::Definition>(
        saga::from_normalized(Json::parse(jsonb_text(stored))));
    if (cache.size() > 1000) cache.clear();  // bounded: definitions are few
    cache[key] = {std::move(bytes), parsed};
    return parsed;
}

void stamp(saga::Event* e) {
    e->now_ms = unix_ms(GetCurrentTransactionStartTimestamp());  // now(), as before
    e->random01 = pg_prng_double(&pg_global_prng_state);
}

// Records a decision's history and sends its commands through the outbox.
void emit(text* saga_id, const std::string& saga_name, Datum data, const saga::Definition& d,
          const saga::Decision& dec, text* message_id, const std::string& traceparent, Oid started_by) {
    for (const auto& t : dec.history) {
        Datum v[8] = {PointerGetDatum(saga_id), text_datum(t.from), text_datum(t.to), text_datum(t.step),
                      text_datum(t.event), 0, message_id ? PointerGetDatum(message_id) : Datum(0),
                      text_datum(saga_name)};
        char n[9] = "        ";
        v[5] = text_or_null(t.reason, &n[5]);
        n[6] = message_id ? ' ' : 'n';
        transition_plan.execute(v, n);
    }
    const std::string id(text_view(saga_id));
    for (const auto& c : dec.commands) {
        const std::string& step = d.steps[c.step].name;
        std::string key = id + ":" + step + (c.compensate ? ":compensate" : "");
        const std::string span = traceparent.empty() ? std::string() : child_of(traceparent);
        Datum v[10] = {text_datum(c.topic), PointerGetDatum(saga_id), text_datum(step), data, text_datum(key),
                       text_datum(saga_name), text_datum(d.reply_to), text_datum(c.compensate ? "true" : "false"),
                       text_datum(std::to_string(c.attempt)), 0};
        char n[11] = "          ";
        v[9] = text_or_null(span, &n[9]);
        KeyOwnerScope key_owner(started_by);
        send_plan.execute(v, n);
    }
}

[[noreturn]] void unknown_saga(text* saga_id, text* name) {
    throw Error(ErrorCode::saga_not_found, "saga not found",
                "No saga " + (name ? "of " + quoted(text_view(name), 80) + " " : std::string()) + "has the id " +
                    quoted(text_view(saga_id), 80) + ".",
                "Start it with once.saga_start, or check the id (see the once.sagas view).");
}

// Saga ids are unique per definition: an id alone is ambiguous once two definitions have it.
[[noreturn]] void ambiguous_saga(text* saga_id) {
    throw Error(ErrorCode::saga_ambiguous, "saga id is used by sagas of several definitions",
                "Sagas of more than one definition have the id " + quoted(text_view(saga_id), 80) + ".",
                "Name the definition: the \"saga\" field of the command, passed back in the reply, or the "
                "name argument of once.saga_reply, saga_retry or saga_abort.");
}

}  // namespace

void check_saga_id(text* saga_id) {
    bool ok = saga_id != nullptr;
    if (ok) {
        std::string_view s = text_view(saga_id);
        int chars = pg_call([&] { return pg_mbstrlen_with_len(s.data(), static_cast<int>(s.size())); });
        // 255 bytes: the saga id is the outbox ordering key of its commands (message key limit).
        ok = !s.empty() && chars <= 200 && s.size() <= 255;
        // [[:cntrl:]]: C0 controls, DEL and the C1 controls U+0080..U+009F (UTF-8 C2 80..C2 9F).
        for (size_t i = 0; ok && i < s.size(); ++i) {
            unsigned char c = static_cast<unsigned char>(s[i]);
            if (c < 0x20 || c == 0x7f) ok = false;
            if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9f) ok = false;
        }
    }
    if (!ok)
        throw Error(ErrorCode::invalid_argument, "invalid saga id",
                    "The saga id was " + (saga_id ? quoted(text_view(saga_id), 80) : std::string("NULL")) + ".",
                    "Use 1 to 200 printable characters (at most 255 bytes), e.g. the order id.");
}

Applied apply(text* saga_id, text* saga_name, saga::Event event, Datum output, text* message_id) {
    check_saga_id(saga_id);
    stamp(&event);
    SpiSession spi;
    AsExtensionOwner owner;
    Datum id[2] = {PointerGetDatum(saga_id), saga_name ? PointerGetDatum(saga_name) : Datum(0)};
    const char id_nulls[] = {' ', saga_name ? ' ' : 'n'};
    uint64 found = lock_plan.execute(id, id_nulls, 2);
    if (found == 0) unknown_saga(saga_id, saga_name);
    if (found > 1) ambiguous_saga(saga_id);
    const std::string name = spi_string(1);
    Datum data, machine, deadline, stored, version;
    spi_value(0, 2, &data);
    spi_value(0, 3, &machine);
    const std::string status = spi_string(4);
    bool has_deadline = spi_value(0, 5, &deadline);
    spi_value(0, 6, &stored);
    spi_value(0, 7, &version);
    const std::string step_before = spi_string(8);
    const std::string traceparent = spi_string(9);
    Datum started_by;
    spi_value(0, 10, &started_by);

    if (message_id != nullptr) {
        Datum v[2] = {PointerGetDatum(saga_id), PointerGetDatum(message_id)};
        if (reply_seen_plan.execute(v, nullptr) == 0) {
            // A redelivered reply changes nothing; it is only recorded.
            std::string outcome = event.type == saga::Event::Type::reply ? saga::outcome_name(event.outcome) : "?";
            std::string step = event.step.empty() ? "?" : event.step;
            Datum t[8] = {PointerGetDatum(saga_id), text_datum(status), text_datum(status), text_datum(event.step),
                          text_datum("duplicate message ignored"), text_datum("reply " + step + " " + outcome),
                          PointerGetDatum(message_id), text_datum(name)};
            transition_plan.execute(t, nullptr);
            return {saga::ReplyResult::duplicate, status, step_before};
        }
    }

    auto definition = definition_of(name, DatumGetInt32(version), stored);
    const saga::Definition& d = *definition;
    saga::State state = saga::state_from_json(Json::parse(jsonb_text(machine)), d);
    // The deadline column is the truth about what is due (operators and tests may move it).
    state.deadline_ms = has_deadline ? unix_ms(DatumGetTimestampTz(deadline)) : 0;
    saga::Decision dec = saga::decide(d, state, event);

    const std::string new_status = saga::status_name(dec.state.status);
    const std::string new_step = d.steps[dec.state.cursor].name;
    bool merge = dec.merge_output && output != 0 &&
                 pg_call([&] { return JB_ROOT_IS_OBJECT(DatumGetJsonbP(output)); });
    Datum u[12] = {PointerGetDatum(saga_id), BoolGetDatum(merge), output, jsonb_datum(saga::to_json(dec.state, d)),
                   text_datum(new_status), text_datum(new_step), Int32GetDatum(dec.state.attempts),
                   TimestampTzGetDatum(timestamp_from_unix_ms(dec.state.deadline_ms)), 0,
                   BoolGetDatum(dec.state.final()), 0, text_datum(name)};
    char n[13] = "            ";
    n[2] = output == 0 ? 'n' : ' ';
    n[7] = dec.state.deadline_ms ? ' ' : 'n';
    u[8] = text_or_null(dec.state.reason, &n[8]);
    u[10] = text_or_null(dec.state.cause, &n[10]);
    if (update_plan.execute(u, n) != 1) throw Error(ErrorCode::internal, "could not store a saga decision");
    Datum new_data;
    spi_value(0, 1, &new_data);
    emit(saga_id, name, new_data, d, dec, message_id, traceparent, DatumGetObjectId(started_by));
    return {dec.result, new_status, new_step};
}

void start(text* name, text* saga_id, Datum input) {
    check_saga_id(saga_id);
    if (input != 0 && !pg_call([&] { return JB_ROOT_IS_OBJECT(DatumGetJsonbP(input)); })) {
        std::string type = pg_call([&] {
            return text_to_cstring(DatumGetTextPP(DirectFunctionCall1(jsonb_typeof, input)));
        });
        throw Error(ErrorCode::invalid_argument, "saga input must be a JSON object", "It was a " + type + ".",
                    "Pass e.g. {\"order_id\": 42}; step outputs are merged into it.");
    }
    if (input == 0) input = jsonb_datum(Json::object());
    saga::Event event;
    event.type = saga::Event::Type::start;
    stamp(&event);

    // The role that starts the saga sees it in once.sagas (before the switch to the owner); the
    // trace it was started under goes with each of its commands.
    const Oid started_by = GetUserId();
    const std::string traceparent = current_traceparent();
    SpiSession spi;
    check_may_start_saga(started_by, name);  // ON407: the definition's start is granted to others
    AsExtensionOwner owner;
    Datum n1[1] = {PointerGetDatum(name)};
    if (latest_definition_plan.execute(n1, nullptr, 1) != 1)
        throw Error(ErrorCode::saga_not_found, "saga definition not found",
                    "No saga is defined with the name " + quoted(text_view(name), 80) + ".",
                    "Define it first with once.saga_define.");
    Datum version, stored;
    spi_value(0, 1, &version);
    spi_value(0, 2, &stored);
    const std::string saga_name(text_view(name));
    auto definition = definition_of(saga_name, DatumGetInt32(version), stored);
    const saga::Definition& d = *definition;
    saga::Decision dec = saga::decide(d, saga::State{}, event);

    Datum v[11] = {PointerGetDatum(saga_id), PointerGetDatum(name), version, input,
                   jsonb_datum(saga::to_json(dec.state, d)), text_datum(saga::status_name(dec.state.status)),
                   text_datum(d.steps[dec.state.cursor].name), Int32GetDatum(dec.state.attempts),
                   TimestampTzGetDatum(timestamp_from_unix_ms(dec.state.deadline_ms)),
                   ObjectIdGetDatum(started_by), 0};
    char nulls[12] = "           ";
    nulls[8] = dec.state.deadline_ms ? ' ' : 'n';
    v[10] = text_or_null(traceparent, &nulls[10]);
    if (insert_plan.execute(v, nulls) == 1) {
        Datum data;
        spi_value(0, 1, &data);
        emit(saga_id, saga_name, data, d, dec, nullptr, traceparent, started_by);
        return;
    }
    // Idempotent: the same start again returns the same saga and sends nothing.
    Datum e[3] = {PointerGetDatum(saga_id), PointerGetDatum(name), input};
    if (existing_plan.execute(e, nullptr) != 1)
        throw Error(ErrorCode::internal, "a conflicting saga vanished", "Saga " + quoted(text_view(saga_id), 80) + ".");
    Datum same;
    if (spi_value(0, 1, &same) && DatumGetBool(same)) return;
    throw Error(ErrorCode::saga_input_mismatch, "saga id already used with another saga or input",
                "Saga " + quoted(text_view(saga_id), 80) + " was started as " + quoted(spi_string(2), 1 << 20) +
                    " with input " + spi_string(3) + ".",
                "Use a new saga id for a new saga.");
}

}  // namespace once::pg::saga_store
