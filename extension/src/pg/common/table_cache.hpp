// A per-backend copy of a small pg_once table that every backend reads on a hot path (inbox
// subscriptions, topic publishing grants). A statement trigger on the table calls
// CacheInvalidateRelcacheByRelid when it changes, and every backend then drops its copy; a
// relcache reset drops it too. Reading the table takes its lock, which processes pending
// invalidations, so a copy is marked valid *before* it is read: an invalidation that arrives
// meanwhile clears the mark again.
#pragma once

#include "pg/common/guard.hpp"

#include <utility>
#include <vector>

namespace once::pg {

class CachedTable {
public:
    explicit CachedTable(const char* relname) : relname_(relname) {}
    CachedTable(const CachedTable&) = delete;
    CachedTable& operator=(const CachedTable&) = delete;

    // rows(load): the cached rows, or load()'s (which runs with SPI connected) when stale. An
    // exception from load() leaves the copy stale.
    template <typename Row, typename Load>
    const std::vector<Row>& rows(std::vector<Row>& cache, Load&& load) {
        if (!begin_load()) return cache;
        try {
            cache = load();
        } catch (...) {
            valid_ = false;
            throw;
        }
        return cache;
    }

private:
    // True when the copy must be read; registers the callback and marks the copy valid.
    bool begin_load();
    static void invalidated(Datum self, Oid relid);

    const char* relname_;
    bool valid_ = false;
    bool callback_registered_ = false;
    Oid relid_ = InvalidOid;
};

// The statement trigger's body: every backend drops its copy of the trigger's table.
Datum invalidate_cached_table(FunctionCallInfo fcinfo, const char* trigger_name);

}  // namespace once::pg
