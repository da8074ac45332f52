// The greatest key_seq per key-lock bucket in shared memory: key_seq_memory.hpp.
#include "pg/outbox/key_seq_memory.hpp"

#include "pg/common/shared_struct.hpp"

extern "C" {
#include "miscadmin.h"
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

void init_shared(void* memory) {
    auto* s = static_cast<Shared*>(memory);
    SpinLockInit(&s->mutex);
    std::memset(s->issued, 0, sizeof(s->issued));
    std::memset(static_cast<void*>(s->last), 0, sizeof(s->last));
}

}  // namespace

void key_seq_memory_init() {
    if (!process_shared_preload_libraries_in_progress) return;
    request_shared_struct("pg_once key_seq per bucket", sizeof(Shared), init_shared, reinterpret_cast<void**>(&shared));
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
