#include "pg/idempotency/command_runner.hpp"

#include "core/error.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/text_args.hpp"

#include <string>
#include <unordered_map>

namespace once::pg {
namespace {

// Bounded: a backend that sees many distinct command texts must not grow without limit.
constexpr size_t kMaxCachedCommands = 256;

// A cached plan and how many executions of it are on the stack right now. A command may call
// once.run itself (nested, e.g. LATERAL once.run(...)), and the inner call may fill the cache:
// a plan that is executing must never be freed (SPI_freeplan of a running plan is a use
// after free). Eviction therefore skips running plans; the cache may
// exceed its bound while nested calls run and shrinks again at the next call that evicts.
struct CachedCommand {
    SPIPlanPtr plan = nullptr;
    int running = 0;
};

// Node-based: a CachedCommand keeps its address while other entries are added or erased.
std::unordered_map<std::string, CachedCommand>& command_plans() {
    static std::unordered_map<std::string, CachedCommand> plans;
    return plans;
}

void evict_idle_plans() {
    auto& plans = command_plans();
    for (auto it = plans.begin(); it != plans.end();) {
        if (it->second.running > 0) {
            ++it;
            continue;
        }
        SPIPlanPtr plan = it->second.plan;
        it = plans.erase(it);
        pg_call([&] { SPI_freeplan(plan); });
    }
}

// Marks a cached plan as executing for its lifetime (also when the execution throws).
class RunningPlan {
public:
    explicit RunningPlan(CachedCommand& entry) : entry_(entry) { ++entry_.running; }
    ~RunningPlan() { --entry_.running; }
    RunningPlan(const RunningPlan&) = delete;
    RunningPlan& operator=(const RunningPlan&) = delete;

private:
    CachedCommand& entry_;
};

[[noreturn]] void bad_shape(const std::string& what) {
    throw Error(ErrorCode::invalid_command_result, "once.run command " + what,
                {}, "The command must be one SQL statement returning one row with one column, "
                    "e.g. SELECT pg_catalog.jsonb_build_object('id', 42).");
}

SPIPlanPtr prepare(const std::string& sql) {
    Oid argument_types[1] = {JSONBOID};
    SPIPlanPtr plan = pg_call([&] { return SPI_prepare(sql.c_str(), 1, argument_types); });
    if (plan == nullptr)
        throw Error(ErrorCode::internal, "could not prepare the once.run command",
                    SPI_result_code_string(SPI_result));
    return plan;
}

// The shape of the command decides how its value becomes jsonb: a jsonb column is taken as
// it is; any other single column is wrapped in to_jsonb() so 42 stays a number and 'x' a string.
SPIPlanPtr prepare_command(const std::string& command) {
    SPIPlanPtr plan = prepare(command);
    List* sources = SPI_plan_get_plan_sources(plan);
    if (list_length(sources) != 1) bad_shape("must be exactly one SQL statement");
    TupleDesc shape = static_cast<CachedPlanSource*>(linitial(sources))->resultDesc;
    if (shape == nullptr) bad_shape("returns no rows (use RETURNING or SELECT)");
    if (shape->natts != 1)
        bad_shape("returns " + std::to_string(shape->natts) + " columns; it must return exactly one");
    if (TupleDescAttr(shape, 0)->atttypid != JSONBOID) {
        pg_call([&] { SPI_freeplan(plan); });
        // A data-modifying statement may stand in WITH, so INSERT ... RETURNING works too.
        // The newline ends a trailing "--" comment in the command.
        plan = prepare("WITH once_command AS (" + command +
                       "\n) SELECT pg_catalog.to_jsonb(c.value) FROM once_command AS c(value)");
    }
    pg_call([&] { return SPI_keepplan(plan); });
    return plan;
}

std::string strip_trailing_semicolons(std::string sql) {
    while (!sql.empty() && (sql.back() == ';' || isspace(static_cast<unsigned char>(sql.back()))))
        sql.pop_back();
    return sql;
}

}  // namespace

bool run_command(text* command, Jsonb* request, Datum* value) {
    std::string sql = strip_trailing_semicolons(std::string(text_view(command)));
    if (sql.empty())
        throw Error(ErrorCode::invalid_argument, "once.run command must not be empty");

    auto& plans = command_plans();
    const std::string cache_key = std::to_string(GetUserId()) + ':' + sql;
    auto found = plans.find(cache_key);
    if (found == plans.end()) {
        if (plans.size() >= kMaxCachedCommands) evict_idle_plans();
        SPIPlanPtr plan = prepare_command(sql);
        found = plans.emplace(cache_key, CachedCommand{plan, 0}).first;
    }
    CachedCommand& entry = found->second;

    Datum arguments[1] = {PointerGetDatum(request)};
    const char nulls[1] = {request ? ' ' : 'n'};
    int rc;
    {
        RunningPlan running(entry);
        rc = pg_call([&] { return SPI_execute_plan(entry.plan, arguments, nulls, false, 0); });
    }
    if (rc < 0)
        throw Error(ErrorCode::internal, "once.run command failed", SPI_result_code_string(rc));
    if (SPI_processed != 1)
        bad_shape("returned " + std::to_string(SPI_processed) + " rows; it must return exactly one");
    bool isnull = false;
    *value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    return !isnull;
}

}  // namespace once::pg
