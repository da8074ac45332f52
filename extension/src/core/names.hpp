// Names pg_once shares between the extension and the once-relay daemon, defined once.
#pragma once

#include <cstdint>

namespace once {

// The channel relays LISTEN on; the extension NOTIFYs it when messages were committed.
constexpr const char* kOutboxWakeChannel = "once_outbox";

// Advisory lock classes (first key of a two-int4 advisory lock; pg_locks shows it as classid).
// Idempotency keys: "once" in ASCII (1869505381).
constexpr std::int32_t kIdempotencyLockClass = 0x6f6e6365;
// Outbox ordering keys, taken in a producer's pre-commit step: "obox" in ASCII (1868722040).
constexpr std::int32_t kOutboxKeyLockClass = 0x6f626f78;
// The relays' maintenance lock (one relay at a time runs saga_tick and purge): "mnt." (1835955246).
constexpr std::int32_t kMaintenanceLockClass = 0x6d6e742e;
// once.saga_define of one name at a time: "saga" (1935763297).
constexpr std::int32_t kSagaDefinitionLockClass = 0x73616761;

}  // namespace once
