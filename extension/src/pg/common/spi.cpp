#include "pg/common/spi.hpp"

#include "core/error.hpp"
#include "core/named_parameters.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>

namespace once::pg {

SpiSession::SpiSession()
    : caller_context_(CurrentMemoryContext), uncaught_at_start_(std::uncaught_exceptions()) {
    int rc = pg_call([] { return SPI_connect(); });
    if (rc != SPI_OK_CONNECT) throw Error(ErrorCode::internal, "SPI_connect failed");
}

SpiSession::~SpiSession() {
    // On the error path leave SPI alone: AtEOXact_SPI / AtEOSubXact_SPI clean up, and
    // SPI_finish here could free memory the pending error still points into.
    if (std::uncaught_exceptions() == uncaught_at_start_) SPI_finish();
}

Datum SpiSession::copy_out(Datum value, bool typbyval, int typlen) const {
    if (typbyval) return value;
    MemoryContext old = MemoryContextSwitchTo(caller_context_);
    // Varlena values may be toast pointers into SPI's tuples: detoast while copying.
    Datum copy = pg_call([&] {
        return typlen == -1 ? PointerGetDatum(PG_DETOAST_DATUM_COPY(value))
                            : datumCopy(value, typbyval, typlen);
    });
    MemoryContextSwitchTo(old);
    return copy;
}

SPIPlanPtr SavedPlan::prepared() {
    if (plan_ == nullptr) {
        SPIPlanPtr plan = pg_call([&] {
            return SPI_prepare(sql_, static_cast<int>(argument_types_.size()),
                               argument_types_.data());
        });
        if (plan == nullptr)
            throw Error(ErrorCode::internal, "could not prepare an internal statement",
                        SPI_result_code_string(SPI_result));
        pg_call([&] { return SPI_keepplan(plan); });
        plan_ = plan;
    }
    return plan_;
}

uint64 SavedPlan::execute(const Datum* values, const char* nulls, long max_rows) {
    SPIPlanPtr plan = prepared();
    int rc = pg_call([&] { return SPI_execute_plan(plan, const_cast<Datum*>(values), nulls, false, max_rows); });
    if (rc < 0)
        throw Error(ErrorCode::internal, "an internal statement failed", SPI_result_code_string(rc));
    return SPI_processed;
}

uint64 SavedPlan::execute(Snapshot snapshot, bool read_only, const Datum* values, const char* nulls,
                          long max_rows) {
    SPIPlanPtr plan = prepared();
    int rc = pg_call([&] {
        return SPI_execute_snapshot(plan, const_cast<Datum*>(values), nulls, snapshot, InvalidSnapshot, read_only,
                                    false, max_rows);
    });
    if (rc < 0)
        throw Error(ErrorCode::internal, "an internal statement failed", SPI_result_code_string(rc));
    return SPI_processed;
}

namespace {

std::vector<std::string> parameter_names(std::initializer_list<NamedPlan::Parameter> parameters) {
    std::vector<std::string> names;
    for (const auto& p : parameters) names.emplace_back(p.name);
    return names;
}

std::vector<Oid> parameter_types(std::initializer_list<NamedPlan::Parameter> parameters) {
    std::vector<Oid> types;
    for (const auto& p : parameters) types.push_back(p.type);
    return types;
}

}  // namespace

NamedPlan::NamedPlan(const char* sql, std::initializer_list<Parameter> parameters)
    : named_sql_(sql), names_(parameter_names(parameters)), types_(parameter_types(parameters)) {}

uint64 NamedPlan::execute(std::initializer_list<Argument> arguments) {
    if (!plan_) {
        try {
            sql_ = numbered_parameters(named_sql_, names_);
        } catch (const std::invalid_argument& e) {
            throw Error(ErrorCode::internal, std::string("malformed internal statement: ") + e.what());
        }
        plan_.emplace(sql_.c_str(), types_);
    }
    std::vector<Datum> values(names_.size(), 0);
    std::string nulls(names_.size(), '?');
    for (const Argument& a : arguments) {
        auto it = std::find(names_.begin(), names_.end(), a.name);
        if (it == names_.end() || nulls[static_cast<size_t>(it - names_.begin())] != '?')
            throw Error(ErrorCode::internal, std::string("internal statement parameter :") + a.name +
                                                 " is unknown or bound twice");
        const size_t i = static_cast<size_t>(it - names_.begin());
        values[i] = a.value;
        nulls[i] = a.null ? 'n' : ' ';
    }
    if (nulls.find('?') != std::string::npos)
        throw Error(ErrorCode::internal, "internal statement parameter :" + names_[nulls.find('?')] + " is not bound");
    return plan_->execute(values.data(), nulls.c_str());
}

int32 SavedPlan::execute_returning_int32(const Datum* values, const char* nulls, const char* what) {
    Datum value;
    if (execute(values, nulls) != 1 || !spi_value(0, 1, &value))
        throw Error(ErrorCode::internal, std::string("could not ") + what);
    return DatumGetInt32(value);
}

namespace {

Oid extension_owner() {
    return pg_call([] {
        Oid schema = get_namespace_oid("once", false);
        HeapTuple tuple = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(schema));
        if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for schema once");
        Oid owner = ((Form_pg_namespace)GETSTRUCT(tuple))->nspowner;
        ReleaseSysCache(tuple);
        return owner;
    });
}

}  // namespace

AsExtensionOwner::AsExtensionOwner() {
    Oid owner = extension_owner();
    GetUserIdAndSecContext(&saved_user_, &saved_security_context_);
    SetUserIdAndSecContext(owner, saved_security_context_ | SECURITY_LOCAL_USERID_CHANGE);
}

AsExtensionOwner::~AsExtensionOwner() {
    SetUserIdAndSecContext(saved_user_, saved_security_context_);
}

bool spi_value(uint64 row, int column, Datum* value) {
    bool isnull = false;
    *value = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, column, &isnull);
    return !isnull;
}

}  // namespace once::pg
