// once.saga_tick(max integer) and once.saga_tick(): the saga timer (see docs/sagas.md).
//
// Two identities in one function. Local step functions run in a subtransaction, as their
// definition's run_as role or their owner, restricted and under a pinned search_path
// (pg/common/run_as.hpp, pg/common/restricted_call.hpp): never with the rights of the role that
// called saga_tick
// (normally once_relay), which its owner could otherwise borrow by changing the function's
// body, and without a trace in that role's session. Everything else (locking due sagas,
// reading a waiting local step, applying a deadline or a local step's outcome) runs AsExtensionOwner through the internal functions
// once._saga_due / _saga_local / _saga_apply, which are granted to nobody: a relay can drive
// the timer, but it cannot apply an arbitrary event (abort a saga, forge a reply) itself.
// The statements below are fully schema-qualified, operators included, so a hostile
// search_path on the caller's side changes nothing in them.
#include "core/error.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/run_as.hpp"
#include "pg/common/spi.hpp"
#include "pg/common/text_args.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/resowner.h"
}

#include <string>
#include <vector>

namespace once::pg {
namespace {

constexpr int kDefaultMax = 1000;
constexpr int kMaxLocalChain = 100;  // local steps run back to back for one saga, at most

SavedPlan due_plan(
    "SELECT d.saga_id, d.local IS NULL, d.name FROM once._saga_due($1) d",
    {INT4OID});

SavedPlan deadline_plan(
    "SELECT once._saga_apply($1, '{\"type\": \"deadline\"}'::pg_catalog.jsonb, "
    "NULL::pg_catalog.jsonb, NULL::pg_catalog.text, $2)",
    {TEXTOID, TEXTOID});

SavedPlan local_plan(
    "SELECT l.local OPERATOR(pg_catalog.->>) 'function'::pg_catalog.text, "
    "       l.local OPERATOR(pg_catalog.->>) 'step'::pg_catalog.text, "
    "       (l.local OPERATOR(pg_catalog.->>) 'compensate'::pg_catalog.text)::pg_catalog.bool, "
    "       l.data, l.run_as::pg_catalog.oid "
    "  FROM once._saga_local($1, $2) l",
    {TEXTOID, TEXTOID});

SavedPlan local_outcome_plan(
    "SELECT once._saga_apply($1, pg_catalog.jsonb_build_object("
    "    'type'::pg_catalog.text, 'reply'::pg_catalog.text, 'step'::pg_catalog.text, $2, "
    "    'outcome'::pg_catalog.text, $3, 'reason'::pg_catalog.text, $4), $5, NULL::pg_catalog.text, $6)",
    {TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID});

struct LocalStep {
    std::string function;
    std::string step;
    bool compensate = false;
    Datum data = 0;  // jsonb, copied out of SPI's tuple; 0 = NULL
    Oid run_as = InvalidOid;  // the definition's run_as role (none: the function's owner)
};

std::string spi_text(uint64 row, int column) {
    Datum value;
    if (!spi_value(row, column, &value)) return {};
    return std::string(text_view(DatumGetTextPP(value)));
}

// The result of running one local step function.
struct LocalResult {
    bool ok = false;
    Datum output = 0;       // jsonb returned by the function; 0 = NULL
    std::string error;      // the error message when !ok
};

// One call of a local step function, run by call_as as the function's role.
struct LocalCall {
    const char* sql;
    Datum values[2];
    char nulls[2];
    MemoryContext result_context;
    Datum output;  // jsonb copied into result_context; 0 = NULL
};

// Plain C (called inside call_as's PG_TRY).
void execute_local_call(void* arg) {
    auto* c = static_cast<LocalCall*>(arg);
    Oid types[2] = {TEXTOID, JSONBOID};
    int rc = SPI_execute_with_args(c->sql, 2, types, c->values, c->nulls, false, 1);
    if (rc != SPI_OK_SELECT || SPI_processed != 1) elog(ERROR, "local step function returned no row");
    bool isnull = false;
    Datum result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    MemoryContext previous = MemoryContextSwitchTo(c->result_context);
    c->output = isnull ? 0 : PointerGetDatum(PG_DETOAST_DATUM_COPY(result));
    MemoryContextSwitchTo(previous);
}

// Runs fn(saga_id, data) as its run_as role or owner (call_as: restricted, search_path
// pinned) in a subtransaction, the way a PL/pgSQL BEGIN ... EXCEPTION block would: its error
// is caught, its work rolled back. Plain C in the PG_TRY (no C++ objects with destructors);
// called through pg_call for the rest.
void run_local_function(const char* function, Oid run_as, text* saga_id, Datum data, bool* ok, Datum* output,
                        char** error) {
    MemoryContext caller_context = CurrentMemoryContext;
    ResourceOwner caller_owner = CurrentResourceOwner;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(caller_context);
    PG_TRY();
    {
        // Resolved here, as the caller and under its search_path (a name that does not resolve
        // fails the step, as a function that raises does).
        StringInfoData name;
        initStringInfo(&name);
        appendStringInfo(&name, "%s(text, jsonb)", function);
        Oid fn = DatumGetObjectId(DirectFunctionCall1(regprocedurein, CStringGetDatum(name.data)));
        // (an owner not trusted for run_as fails the step, with ON306's message)
        Oid role = resolve_run_as(fn, run_as, "saga step function");
        StringInfoData sql;
        initStringInfo(&sql);
        appendStringInfo(&sql, "SELECT %s($1, $2)::pg_catalog.jsonb",
                         quote_qualified_identifier(get_namespace_name(get_func_namespace(fn)),
                                                    get_func_name(fn)));
        LocalCall call{sql.data, {PointerGetDatum(saga_id), data}, {' ', data == 0 ? 'n' : ' '}, caller_context, 0};
        call_as(role, execute_local_call, &call);
        *output = call.output;
        *ok = true;
        ReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(caller_context);
        CurrentResourceOwner = caller_owner;
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(caller_context);
        ErrorData* data_error = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(caller_context);
        CurrentResourceOwner = caller_owner;
        *ok = false;
        *output = 0;
        *error = data_error->message ? data_error->message : pstrdup("error");
    }
    PG_END_TRY();
}

LocalResult run_local(const LocalStep& step, text* saga_id) {
    LocalResult r;
    bool ok = false;
    Datum output = 0;
    char* error = nullptr;
    const char* function = step.function.c_str();
    Datum data = step.data;
    Oid run_as = step.run_as;
    pg_call([&] { run_local_function(function, run_as, saga_id, data, &ok, &output, &error); });
    r.ok = ok;
    r.output = output;
    if (!ok) r.error = error ? error : "error";
    return r;
}

// Applies a local step's outcome (as the owner, through _saga_apply).
void apply_local_outcome(text* saga_id, text* name, const LocalStep& step, const LocalResult& r) {
    const char* outcome = step.compensate ? (r.ok ? "compensated" : "compensation_failed")
                                          : (r.ok ? "succeeded" : "failed");
    Datum values[6] = {PointerGetDatum(saga_id), text_datum(step.step), text_datum(outcome),
                       r.ok ? Datum(0) : text_datum(r.error), r.output, PointerGetDatum(name)};
    char nulls[6] = {' ', ' ', ' ', r.ok ? 'n' : ' ', r.output == 0 ? 'n' : ' ', ' '};
    AsExtensionOwner owner;
    local_outcome_plan.execute(values, nulls);
}

// The local step the saga waits for, if any (as the owner). Copies what it returns out of SPI.
bool waiting_local_step(text* saga_id, text* name, LocalStep* step, const SpiSession& spi) {
    AsExtensionOwner owner;
    Datum values[2] = {PointerGetDatum(saga_id), PointerGetDatum(name)};
    if (local_plan.execute(values, nullptr, 1) != 1) return false;
    step->function = spi_text(0, 1);
    step->step = spi_text(0, 2);
    Datum compensate;
    step->compensate = spi_value(0, 3, &compensate) && DatumGetBool(compensate);
    Datum data;
    step->data = spi_value(0, 4, &data) ? spi.copy_out(data, false, -1) : 0;
    Datum run_as;
    step->run_as = spi_value(0, 5, &run_as) ? DatumGetObjectId(run_as) : InvalidOid;
    return !step->function.empty();
}

int32 tick(int32 max) {
    SpiSession spi;
    std::vector<std::string> ids, names;  // a saga is (name, saga_id)
    std::vector<bool> has_local;
    {
        AsExtensionOwner owner;
        Datum values[1] = {Int32GetDatum(max)};
        uint64 n = due_plan.execute(values, nullptr);
        for (uint64 row = 0; row < n; ++row) {
            ids.push_back(spi_text(row, 1));
            Datum local_is_null;
            has_local.push_back(spi_value(row, 2, &local_is_null) && !DatumGetBool(local_is_null));
            names.push_back(spi_text(row, 3));
        }
    }
    for (size_t i = 0; i < ids.size(); ++i) {
        text* saga_id = pg_call([&] { return cstring_to_text_with_len(ids[i].data(), static_cast<int>(ids[i].size())); });
        text* name = pg_call([&] { return cstring_to_text_with_len(names[i].data(), static_cast<int>(names[i].size())); });
        if (!has_local[i]) {
            AsExtensionOwner owner;
            Datum values[2] = {PointerGetDatum(saga_id), PointerGetDatum(name)};
            deadline_plan.execute(values, nullptr);
        }
        // Local steps: a chain of them runs at once, bounded.
        LocalStep step;
        for (int chain = 0; chain < kMaxLocalChain && waiting_local_step(saga_id, name, &step, spi); ++chain)
            apply_local_outcome(saga_id, name, step, run_local(step, saga_id));
    }
    return static_cast<int32>(ids.size());
}

}  // namespace
}  // namespace once::pg

using namespace once;
using namespace once::pg;

// once.saga_tick(max integer) returns integer; once.saga_tick() = saga_tick(1000).
ONCE_SQL_FUNCTION(once_saga_tick) {
    int32 max = kDefaultMax;
    if (PG_NARGS() > 0) {
        if (PG_ARGISNULL(0) || PG_GETARG_INT32(0) < 1)
            throw Error(ErrorCode::invalid_argument, "max must be a positive number",
                        PG_ARGISNULL(0) ? "max was NULL." : "max was " + std::to_string(PG_GETARG_INT32(0)) + ".",
                        "Pass how many due sagas to handle in this call, e.g. 1000.");
        max = PG_GETARG_INT32(0);
    }
    return Int32GetDatum(tick(max));
}
