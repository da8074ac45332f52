// pg_once's structs in shared memory, each asked for once while the library is preloaded
// (shared_preload_libraries): one pair of shmem hooks for all of them, chained to whatever
// hooks were installed before, so every struct is sized at the request and created (or found,
// in a backend started later) at startup under AddinShmemInitLock.
#pragma once

#include "pg/common/postgres_headers.hpp"

#include <cstddef>

namespace once::pg {

// Asks for `size` bytes named `name` (as pg_shmem_allocations shows it). At startup `*where`
// points at them, and `init` ran on them once, in the process that created them. Call it from
// _PG_init only while process_shared_preload_libraries_in_progress; at most four structs.
void request_shared_struct(const char* name, size_t size, void (*init)(void* memory), void** where);

}  // namespace once::pg
