// Whom inbox handlers and saga local steps run as; the model and why: run_as.hpp.
#include "pg/common/run_as.hpp"

#include "core/error.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/restricted_call.hpp"
#include "pg/common/sqlstate.hpp"
#include "pg/common/text_args.hpp"

extern "C" {
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
}

namespace once::pg {

Oid resolve_run_as(Oid fn, Oid chosen, const char* what) {
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
    if (!HeapTupleIsValid(tuple))
        ereport(ERROR, (errcode(sqlstate_for(ErrorCode::handler_unavailable)),
                        errmsg("the %s no longer exists", what),
                        errdetail("Function oid %u was dropped.", fn),
                        errhint("Create it again and subscribe or define it anew.")));
    Form_pg_proc proc = (Form_pg_proc)GETSTRUCT(tuple);
    const Oid owner = proc->proowner;
    const bool ours = proc->pronamespace == get_namespace_oid("once", false);
    ReleaseSysCache(tuple);
    if (ours) return InvalidOid;
    if (!OidIsValid(chosen)) return owner;
    if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(chosen)))
        ereport(ERROR, (errcode(sqlstate_for(ErrorCode::untrusted_function)),
                        errmsg("the %s's run_as role no longer exists", what),
                        errdetail("Role oid %u was dropped.", chosen),
                        errhint("Subscribe or define it again with an existing run_as role.")));
    // The owner can change the body: it must have the chosen role's rights already.
    if (owner != chosen && !superuser_arg(owner) && !has_privs_of_role(owner, chosen)) {
        const char* chosen_name = GetUserNameFromId(chosen, false);
        ereport(ERROR, (errcode(sqlstate_for(ErrorCode::untrusted_function)),
                        errmsg("the %s may not run as role \"%s\"", what, chosen_name),
                        errdetail("%s is owned by role \"%s\", which could change its body to act with the "
                                  "rights of \"%s\" that it does not have.",
                                  format_procedure(fn), GetUserNameFromId(owner, false), chosen_name),
                        errhint("Make the function owned by \"%s\" (ALTER FUNCTION ... OWNER TO), or choose a "
                                "run_as role whose rights its owner has.",
                                chosen_name)));
    }
    return chosen;
}

Oid function_run_as(Oid fn, Oid chosen, std::string_view what) {
    std::string name(what);
    return pg_call([&] { return resolve_run_as(fn, chosen, name.c_str()); });
}

void call_as(Oid role, void (*body)(void*), void* arg) {
    if (!OidIsValid(role)) {
        body(arg);
        return;
    }
    call_restricted(role, body, arg);
}

}  // namespace once::pg

using namespace once;
using namespace once::pg;

// once._function_run_as(fn regprocedure, run_as regrole, what text) RETURNS regrole:
// saga_define's check of each local step function (NULL: it runs as the caller).
ONCE_SQL_FUNCTION(once_function_run_as) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    const Oid chosen = PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1);
    const std::string what = PG_ARGISNULL(2) ? "function" : std::string(text_view(PG_GETARG_TEXT_PP(2)));
    Oid role = function_run_as(PG_GETARG_OID(0), chosen, what);
    if (!OidIsValid(role)) PG_RETURN_NULL();
    PG_RETURN_OID(role);
}
