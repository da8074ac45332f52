#include "pg/common/sql_version.hpp"

#include "pg/common/postgres_headers.hpp"

#include "core/error.hpp"
#include "pg/common/guard.hpp"

extern "C" {
#include "access/skey.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "utils/inval.h"
}

#include <cstring>
#include <string>

#ifndef ONCE_VERSION
#error "ONCE_VERSION must be defined by the build (it is read from sql/pg_once.control)"
#endif

namespace once::pg {

namespace {

bool version_checked = false;
bool callbacks_registered = false;

void forget_version(Datum, int, uint32) { version_checked = false; }
void forget_version_relcache(Datum, Oid) { version_checked = false; }

// pg_extension.extversion of pg_once, or NULL when it is not installed (palloc'd).
char* installed_version() {
    Oid extension = get_extension_oid("pg_once", true);
    if (!OidIsValid(extension)) return nullptr;
    Relation catalog = table_open(ExtensionRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(extension));
    SysScanDesc scan = systable_beginscan(catalog, ExtensionOidIndexId, true, nullptr, 1, &key);
    HeapTuple tuple = systable_getnext(scan);
    char* version = nullptr;
    if (HeapTupleIsValid(tuple)) {
        bool isnull = false;
        Datum value = heap_getattr(tuple, Anum_pg_extension_extversion,
                                   RelationGetDescr(catalog), &isnull);
        if (!isnull) version = text_to_cstring(DatumGetTextPP(value));
    }
    systable_endscan(scan);
    table_close(catalog, AccessShareLock);
    return version;
}

}  // namespace

void require_current_sql_version() {
    if (version_checked) return;
    // pg_once's own install and update scripts may call its functions (the 0.1 script asks
    // whether the library is preloaded): they only define objects, so any version may.
    if (creating_extension && CurrentExtensionObject == pg_call([] { return get_extension_oid("pg_once", true); }))
        return;
    if (!callbacks_registered) {
        pg_call([] {
            CacheRegisterSyscacheCallback(PROCOID, forget_version, (Datum)0);
            CacheRegisterRelcacheCallback(forget_version_relcache, (Datum)0);
        });
        callbacks_registered = true;
    }
    const char* version = pg_call([] { return installed_version(); });
    if (version == nullptr)
        throw Error(ErrorCode::sql_version_mismatch, "pg_once is not installed in this database",
                    {}, "Run CREATE EXTENSION pg_once.");
    if (std::strcmp(version, ONCE_VERSION) != 0)
        throw Error(ErrorCode::sql_version_mismatch,
                    std::string("pg_once's SQL objects in this database are version ") + version +
                        ", but the loaded library is version " ONCE_VERSION,
                    "The library serves only its own version of the SQL objects.",
                    "Run ALTER EXTENSION pg_once UPDATE (a new library is installed; the "
                    "database still has the old version's functions and tables).");
    version_checked = true;
}

}  // namespace once::pg
