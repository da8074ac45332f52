// The inbound relay's own metrics (--source): rendered after the relay's common ones on the
// same /metrics when the relay runs inbound. Atomics: the metrics server reads them from its
// thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace once::relay {

struct InboundMetrics {
    std::atomic<bool> enabled{false};
    std::atomic<int64_t> consumer_pending{-1};   // JetStream: stream messages not yet delivered to the consumer
    std::atomic<int64_t> consumer_ack_pending{-1};   // delivered, not acknowledged
    std::atomic<int64_t> held{0};                // fetched, not settled (waiting, in the inbox, or retrying)
    std::atomic<uint64_t> delivered{0};          // processed by the inbox's handlers and acked
    std::atomic<uint64_t> duplicates{0};         // the inbox had it already (a redelivery or a second publish): acked
    std::atomic<uint64_t> poison{0};             // poison in the inbox (kept there, inbox_poison): acked
    std::atomic<uint64_t> retries{0};            // inbox attempts that must be repeated (handler failed, no handler, database lost)
    std::atomic<uint64_t> fences{0};             // times messages waited for a redelivery to keep per-key order
};

std::string render_inbound_metrics(const InboundMetrics& m);

}  // namespace once::relay
