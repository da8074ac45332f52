// Another role's code run without a trace in the caller's session; the model: restricted_call.hpp.
#include "pg/common/restricted_call.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/objectaddress.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
}

namespace once::pg {
namespace {

// pg_catalog is implicitly first; "$user" is the role the code runs as; pg_temp is named last
// so that it is not implicitly first.
constexpr const char* kPinnedSearchPath = "\"$user\", public, pg_temp";

object_access_hook_type previous_object_access_hook = nullptr;

// Restricted calls in progress (handlers may deliver to other handlers, and so on).
int restricted_depth = 0;

// (class id, object id) of each object created during a restricted call that lives in a
// schema, flattened: checked when the call returns. In TopTransactionContext; back to NIL when
// the outermost call ends, however it ends.
List* created_objects = NIL;

void note_created_object(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void* arg) {
    if (previous_object_access_hook) previous_object_access_hook(access, class_id, object_id, sub_id, arg);
    if (access != OAT_POST_CREATE || restricted_depth == 0 || sub_id != 0) return;
    if (!is_objectclass_supported(class_id) || get_object_attnum_namespace(class_id) == InvalidAttrNumber) return;
    MemoryContext caller_context = MemoryContextSwitchTo(TopTransactionContext);
    created_objects = lappend_oid(created_objects, class_id);
    created_objects = lappend_oid(created_objects, object_id);
    MemoryContextSwitchTo(caller_context);
}

// The schema of an object noted above, InvalidOid when it was dropped again.
Oid created_object_schema(Oid class_id, Oid object_id) {
    const int cache = get_object_catcache_oid(class_id);
    if (cache < 0) return InvalidOid;
    HeapTuple tuple = SearchSysCache1(cache, ObjectIdGetDatum(object_id));
    if (!HeapTupleIsValid(tuple)) return InvalidOid;
    bool isnull = false;
    Datum schema = SysCacheGetAttr(cache, tuple, get_object_attnum_namespace(class_id), &isnull);
    ReleaseSysCache(tuple);
    return isnull ? InvalidOid : DatumGetObjectId(schema);
}

// Raises an error when an object noted since index `from` is in a temporary schema: it would
// outlive the call in the caller's session.
void refuse_temporary_objects(int from) {
    if (list_length(created_objects) <= from) return;
    CommandCounterIncrement();  // the last statement's objects, visible to the catalog caches
    for (int i = from; i + 1 < list_length(created_objects); i += 2) {
        const Oid class_id = list_nth_oid(created_objects, i);
        const Oid object_id = list_nth_oid(created_objects, i + 1);
        const Oid schema = created_object_schema(class_id, object_id);
        if (OidIsValid(schema) && isAnyTempNamespace(schema))
            ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                            errmsg("cannot create temporary objects within code pg_once runs on another role's behalf"),
                            errdetail("It would outlive the call in the caller's session."),
                            errhint("Create the object in a regular schema, or drop it before returning.")));
    }
}

}  // namespace

void restricted_call_init() {
    previous_object_access_hook = object_access_hook;
    object_access_hook = note_created_object;
}

void call_restricted(Oid role, void (*body)(void*), void* arg) {
    Oid saved_user;
    int saved_context;
    GetUserIdAndSecContext(&saved_user, &saved_context);
    const int noted = list_length(created_objects);
    SetUserIdAndSecContext(role, saved_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    const int nest_level = NewGUCNestLevel();
    ++restricted_depth;
    PG_TRY();
    {
        set_config_option("search_path", kPinnedSearchPath, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                          false);
        body(arg);
        refuse_temporary_objects(noted);
    }
    PG_FINALLY();
    {
        --restricted_depth;
        created_objects = list_truncate(created_objects, noted);
        AtEOXact_GUC(false, nest_level);
        SetUserIdAndSecContext(saved_user, saved_context);
    }
    PG_END_TRY();
}

}  // namespace once::pg
