// pg_once's structs in shared memory: shared_struct.hpp.
#include "pg/common/shared_struct.hpp"

extern "C" {
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

namespace once::pg {
namespace {

struct Request {
    const char* name;
    size_t size;
    void (*init)(void*);
    void** where;
};

constexpr int kMaxRequests = 4;
Request requests[kMaxRequests];
int request_count = 0;
shmem_request_hook_type previous_request_hook = nullptr;
shmem_startup_hook_type previous_startup_hook = nullptr;

void request_shmem() {
    if (previous_request_hook) previous_request_hook();
    for (int i = 0; i < request_count; ++i) RequestAddinShmemSpace(MAXALIGN(requests[i].size));
}

void startup_shmem() {
    if (previous_startup_hook) previous_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    for (int i = 0; i < request_count; ++i) {
        const Request& r = requests[i];
        bool found = false;
        *r.where = ShmemInitStruct(r.name, r.size, &found);
        if (!found) r.init(*r.where);
    }
    LWLockRelease(AddinShmemInitLock);
}

}  // namespace

void request_shared_struct(const char* name, size_t size, void (*init)(void* memory), void** where) {
    if (request_count == kMaxRequests) elog(ERROR, "pg_once: too many shared memory structs (%s)", name);
    if (request_count == 0) {
        previous_request_hook = shmem_request_hook;
        shmem_request_hook = request_shmem;
        previous_startup_hook = shmem_startup_hook;
        shmem_startup_hook = startup_shmem;
    }
    requests[request_count++] = Request{name, size, init, where};
}

}  // namespace once::pg
