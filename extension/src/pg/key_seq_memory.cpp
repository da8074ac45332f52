// The greatest key_seq per key-lock bucket in shared memory: key_seq_memory.hpp.
#include "key_seq_memory.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
}

#include <cstring>

namespace once::pg {
namespace {

constexpr uint32 kBuckets = kKeySeqMemoryBuckets;

struct Shared {
    // The bucket locks are per database while this memory is per cluster: two databases'
    // committers may touch one entry at once, so each read and raise is under the mutex.
    slock_t mutex;
    bool issued[kBuckets];
    Uuid last[kBuckets];
};

Shared* shared = nullptr;
shmem_request_hook_type previous_request_hook = nullptr;
shmem_startup_hook_type previous_startup_hook = nullptr;

void request_shmem() {
    if (previous_request_hook) previous_request_hook();
    RequestAddinShmemSpace(MAXALIGN(sizeof(Shared)));
}

void startup_shmem() {
    if (previous_startup_hook) previous_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found = false;
    shared = static_cast<Shared*>(ShmemInitStruct("pg_once key_seq per bucket", sizeof(Shared), &found));
    if (!found) {
        SpinLockInit(&shared->mutex);
        std::memset(shared->issued, 0, sizeof(shared->issued));
        std::memset(static_cast<void*>(shared->last), 0, sizeof(shared->last));
    }
    LWLockRelease(AddinShmemInitLock);
}

}  // namespace

void key_seq_memory_init() {
    if (!process_shared_preload_libraries_in_progress) return;
    previous_request_hook = shmem_request_hook;
    shmem_request_hook = request_shmem;
    previous_startup_hook = shmem_startup_hook;
    shmem_startup_hook = startup_shmem;
}

bool key_seq_memory_available() { return shared != nullptr; }

std::optional<Uuid> key_seq_memory_last(uint32 bucket) {
    if (shared == nullptr || bucket >= kBuckets) return std::nullopt;
    std::optional<Uuid> out;
    SpinLockAcquire(&shared->mutex);
    if (shared->issued[bucket]) out = shared->last[bucket];
    SpinLockRelease(&shared->mutex);
    return out;
}

void key_seq_memory_raise(uint32 bucket, const Uuid& seq) {
    if (shared == nullptr || bucket >= kBuckets) return;
    SpinLockAcquire(&shared->mutex);
    if (!shared->issued[bucket] || shared->last[bucket] < seq) {
        shared->last[bucket] = seq;
        shared->issued[bucket] = true;
    }
    SpinLockRelease(&shared->mutex);
}

}  // namespace once::pg
