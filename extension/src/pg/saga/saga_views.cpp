// once._own_sagas() and once._own_saga_history(): the rows of the views
// once.sagas and once.saga_history that a role other than once_admin sees, i.e. the sagas that
// it, or a role whose privileges it has, started (and their transitions).
//
// Why functions: the views were security barriers over the tables, but a caller's leakproof
// condition (saga_id >= $1) is still pushed below a security barrier, into an index condition
// evaluated before the row filter, and EXPLAIN ANALYZE then counted the hidden rows it matched.
// The planner pushes nothing into a function, so the caller's conditions apply to these rows
// only. The caller is the current user (the querying role, as current_user in the view was);
// the rows are read as the extension owner, with fully qualified statements.
#include "pg/common/guard.hpp"
#include "pg/common/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/tuplestore.h"
}

namespace once::pg {
namespace {

SavedPlan caller_roles_plan(
    "SELECT pg_catalog.array_agg(r.oid) FROM pg_catalog.pg_roles r "
    " WHERE pg_catalog.pg_has_role($1, r.oid, 'USAGE'::pg_catalog.text)",
    {OIDOID});

// Both take the starters as an array of role oids: planned with its values, a role that
// started few sagas finds them through saga_instances_started_by.
SavedPlan sagas_plan(
    "SELECT s.saga_id, s.name, s.version, s.status, s.step, s.data, s.input, s.deadline, s.attempts, "
    "       s.last_error, s.created_at, s.updated_at, s.finished_at, s.failure_cause "
    "  FROM once.saga_instances s "
    " WHERE s.started_by OPERATOR(pg_catalog.=) ANY ($1)",
    {OIDARRAYOID});

// Each saga's transitions through saga_transitions_saga (OFFSET 0 keeps the lookup per saga:
// the cost follows the caller's sagas, not every transition, which a hash join would read).
SavedPlan history_plan(
    "SELECT t.saga_id, t.at, t.from_status, t.to_status, t.step, t.event, t.reason, t.message_id, t.id, t.name "
    "  FROM once.saga_instances s "
    " CROSS JOIN LATERAL (SELECT t.* FROM once.saga_transitions t "
    "                      WHERE t.saga_id OPERATOR(pg_catalog.=) s.saga_id "
    "                        AND t.name OPERATOR(pg_catalog.=) s.name OFFSET 0) t "
    " WHERE s.started_by OPERATOR(pg_catalog.=) ANY ($1)",
    {OIDARRAYOID});

// Runs `rows` for the roles whose privileges the caller has and returns its result set.
Datum rows_of_caller(FunctionCallInfo fcinfo, SavedPlan& rows) {
    const Oid caller = GetUserId();
    pg_call([&] { InitMaterializedSRF(fcinfo, 0); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    SpiSession spi;
    AsExtensionOwner owner;
    Datum caller_value[1] = {ObjectIdGetDatum(caller)};
    Datum roles;
    if (caller_roles_plan.execute(caller_value, nullptr) != 1 || !spi_value(0, 1, &roles)) return (Datum)0;
    const uint64 n = rows.execute(&roles, nullptr);
    pg_call([&] {
        for (uint64 i = 0; i < n; ++i) tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
    });
    return (Datum)0;
}

}  // namespace
}  // namespace once::pg

using namespace once::pg;

ONCE_SQL_FUNCTION(once_own_sagas) {
    return rows_of_caller(fcinfo, sagas_plan);
}

ONCE_SQL_FUNCTION(once_own_saga_history) {
    return rows_of_caller(fcinfo, history_plan);
}
