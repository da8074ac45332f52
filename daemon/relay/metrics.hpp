// The relay's counters, and their Prometheus text rendering. One Metrics object is owned by
// main and handed to the loop and the HTTP server (which reads it from its own thread, hence
// the atomics). Nothing here is global.
#pragma once

#include "inbound/inbound_metrics.hpp"
#include "outbox_gauges.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "prometheus_text.hpp"

namespace once::relay {


class LatencyHistogram {
public:
    static constexpr std::array<double, 14> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                       0.1,    0.25,  0.5,    1,     2.5,   5,     10};
    void observe(double seconds);
    // Prometheus lines for histogram `name` (cumulative buckets, +Inf, _sum, _count).
    std::string render(const std::string& name) const;
    uint64_t count() const { return count_.load(std::memory_order_relaxed); }

private:
    std::array<std::atomic<uint64_t>, kBounds.size()> buckets_{};   // non-cumulative
    std::atomic<uint64_t> count_{0};
    std::atomic<uint64_t> sum_micros_{0};
};

// The counters the log summary reports, read at one moment.
struct MetricsSnapshot {
    uint64_t acked = 0, nacked = 0, dead = 0;
};

struct Metrics {
    std::atomic<uint64_t> published{0};   // handed to the sink
    std::atomic<uint64_t> acked{0};       // acknowledged in the outbox after delivery
    std::atomic<uint64_t> nacked{0};      // given back with once.nack: sink failures, held back, unsent at a stop
    std::atomic<uint64_t> dead{0};        // refused permanently by the sink
    std::atomic<uint64_t> given_back{0};  // locked mode: claimed, then back in the outbox by a rollback
    std::atomic<uint64_t> batches{0};     // non-empty claims
    std::atomic<uint64_t> reconnects{0};  // database connections re-established
    // The WAL transport (claim/wal_stream.hpp).
    std::atomic<uint64_t> wal_written_back{0};   // refused by the sink, written back to the outbox table
    std::atomic<uint64_t> wal_unauthentic{0};    // pg_once messages whose tag did not verify, or too long: skipped
    std::atomic<uint64_t> wal_malformed{0};      // pg_once messages that do not decode: skipped
    std::atomic<uint64_t> wal_stream_restarts{0};   // replication connections re-opened
    std::atomic<uint64_t> wal_passed_over{0};       // messages of topics this relay does not serve (--topics)
    std::atomic<int64_t> wal_stream_active{-1};     // 1: this relay streams the slot; 0: standing by or reopening; -1: table transport
    std::atomic<int64_t> wal_write_backs_waiting{0};   // write-backs whose key's lock is held (a prepared transaction): retried
    std::atomic<int64_t> wal_slot_lag_bytes{-1};    // read with the outbox gauges; -1: not read / no slot
    // wal::SlotVerdict of the last look at the slot (0 usable, 1 missing, 2 lost, 3 refused:
    // physical standbys before 17); -1: not the WAL transport.
    std::atomic<int> wal_slot_verdict{-1};
    // WAL transport: the format version of a message the stream stopped before (a newer
    // extension's; 0: none met).
    std::atomic<int> wal_newer_format{0};
    // Unix microseconds of the oldest unconfirmed transaction's commit; 0: nothing pending;
    // -1: not the WAL transport.
    std::atomic<int64_t> wal_oldest_pending_commit_us{-1};
    std::atomic<int64_t> in_flight{0};
    std::atomic<int64_t> last_claim_unix_ms{0};   // last successful claim (empty or not)
    std::atomic<bool> db_connected{false};
    std::atomic<bool> sink_connected{false};
    LatencyHistogram publish_latency;

    MetricsSnapshot snapshot() const { return {acked.load(), nacked.load(), dead.load()}; }
    // The WAL transport's stream counts too: a slot it may not stream means messages wait (or
    // are lost), so the relay is not healthy although it still serves the table.
    bool healthy() const {
        return db_connected.load() && sink_connected.load() && wal_slot_verdict.load() <= 0 && wal_newer_format.load() == 0;
    }
    std::string render_prometheus(const std::string& relay_name) const;

    // The outbox gauges, replaced whole by GaugeReader's thread after each read.
    void set_outbox_gauges(OutboxGauges g);
    OutboxGauges outbox_gauges() const;
    bool outbox_gauges_enabled = false;   // set before the servers start: render them at all
    InboundMetrics inbound;               // --source: the inbound relay's (rendered when enabled)

private:
    mutable std::mutex gauges_mutex_;
    OutboxGauges gauges_;
};

}  // namespace once::relay
