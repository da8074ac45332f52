#include "pg/saga/saga_start_grants.hpp"

#include "core/error.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/spi.hpp"
#include "pg/common/text_args.hpp"

extern "C" {
#include "utils/acl.h"
}

#include <string>

namespace once::pg {
namespace {

SavedPlan grantees_plan(
    "SELECT g.grantee FROM once.saga_start_grants g WHERE g.name OPERATOR(pg_catalog.=) $1", {TEXTOID});

SavedPlan insert_plan(
    "INSERT INTO once.saga_start_grants (grantee, name, granted_by) VALUES ($1, $2, $3)"
    " ON CONFLICT DO NOTHING",
    {OIDOID, TEXTOID, OIDOID});

}  // namespace

void check_may_start_saga(Oid role, text* name) {
    Datum values[] = {PointerGetDatum(name)};
    uint64 n;
    {
        AsExtensionOwner owner;
        n = grantees_plan.execute(values, nullptr);
    }
    if (n == 0) return;  // no grant for this definition: every producer may start it, as in 0.2
    if (pg_call([&] { return superuser_arg(role); })) return;  // like every privilege check
    for (uint64 row = 0; row < n; ++row) {
        Datum grantee;
        spi_value(row, 1, &grantee);
        const Oid g = DatumGetObjectId(grantee);
        if (g == role || pg_call([&] { return has_privs_of_role(role, g); })) return;
    }
    const std::string role_name = pg_call([&] { return std::string(GetUserNameFromId(role, false)); });
    const std::string saga(text_view(name));
    throw Error(ErrorCode::saga_start_denied,
                "role \"" + role_name + "\" may not start saga \"" + saga + "\"",
                "The definition has start grants (once.saga_start_grants), and none is held by this role "
                "or by a role whose privileges it has.",
                "An admin grants it with once.grant_saga_start('" + role_name + "', '" + saga + "').");
}

}  // namespace once::pg

// once.grant_saga_start(role, name): true when the grant is new. The definition need not
// exist yet, so an admin can close a name before defining it.
ONCE_SQL_FUNCTION(once_grant_saga_start) {
    using namespace once;
    using namespace once::pg;
    if (PG_ARGISNULL(0)) throw Error(ErrorCode::invalid_argument, "role must not be NULL");
    if (PG_ARGISNULL(1) || VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(1)) == 0)
        throw Error(ErrorCode::saga_invalid_definition, "saga name must not be NULL or empty", {},
                    "Pass the name the saga is defined under (once.saga_define).");
    Datum values[] = {PG_GETARG_DATUM(0), PG_GETARG_DATUM(1), ObjectIdGetDatum(GetUserId())};
    SpiSession spi;
    AsExtensionOwner owner;
    PG_RETURN_BOOL(insert_plan.execute(values, nullptr) == 1);
}
