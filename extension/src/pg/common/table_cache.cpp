#include "pg/common/table_cache.hpp"

#include "core/error.hpp"

extern "C" {
#include "commands/trigger.h"
#include "utils/inval.h"
}

#include <string>

namespace once::pg {

void CachedTable::invalidated(Datum self, Oid relid) {
    // Runs inside invalidation processing: only clear a flag.
    auto* table = reinterpret_cast<CachedTable*>(DatumGetPointer(self));
    if (relid == InvalidOid || relid == table->relid_) table->valid_ = false;
}

bool CachedTable::begin_load() {
    if (!callback_registered_) {
        pg_call([&] { CacheRegisterRelcacheCallback(invalidated, PointerGetDatum(this)); });
        callback_registered_ = true;
    }
    if (valid_) return false;
    relid_ = pg_call([&] { return get_relname_relid(relname_, get_namespace_oid("once", false)); });
    valid_ = true;
    return true;
}

Datum invalidate_cached_table(FunctionCallInfo fcinfo, const char* trigger_name) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        throw Error(ErrorCode::invalid_argument, std::string(trigger_name) + " is a trigger function");
    Oid relid = RelationGetRelid(reinterpret_cast<TriggerData*>(fcinfo->context)->tg_relation);
    pg_call([&] { CacheInvalidateRelcacheByRelid(relid); });
    return PointerGetDatum(nullptr);
}

}  // namespace once::pg
