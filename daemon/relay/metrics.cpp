#include "metrics.hpp"

#include "prometheus_text.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <sstream>

namespace once::relay {

void LatencyHistogram::observe(double seconds) {
    if (seconds < 0) seconds = 0;
    for (size_t i = 0; i < kBounds.size(); ++i) {
        if (seconds <= kBounds[i]) {
            buckets_[i].fetch_add(1, std::memory_order_relaxed);
            break;
        }
    }
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_micros_.fetch_add(static_cast<uint64_t>(seconds * 1e6), std::memory_order_relaxed);
}

namespace {
std::string fmt_double(double v) { return format_metric_value(v); }
}  // namespace

void Metrics::set_outbox_gauges(OutboxGauges g) {
    std::lock_guard<std::mutex> lock(gauges_mutex_);
    gauges_ = std::move(g);
}

OutboxGauges Metrics::outbox_gauges() const {
    std::lock_guard<std::mutex> lock(gauges_mutex_);
    return gauges_;
}

std::string LatencyHistogram::render(const std::string& name) const {
    std::ostringstream out;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kBounds.size(); ++i) {
        cumulative += buckets_[i].load(std::memory_order_relaxed);
        out << name << "_bucket{le=\"" << fmt_double(kBounds[i]) << "\"} " << cumulative << "\n";
    }
    uint64_t total = count_.load(std::memory_order_relaxed);
    out << name << "_bucket{le=\"+Inf\"} " << total << "\n";
    out << name << "_sum " << fmt_double(sum_micros_.load(std::memory_order_relaxed) / 1e6) << "\n";
    out << name << "_count " << total << "\n";
    return out.str();
}

std::string Metrics::render_prometheus(const std::string& relay_name) const {
    std::ostringstream out;
    auto counter = [&](const char* name, const char* help, uint64_t v) {
        out << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n" << name << " " << v << "\n";
    };
    auto gauge = [&](const char* name, const char* help, const std::string& v) {
        out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n" << name << " " << v << "\n";
    };
    out << "# HELP once_relay_info Relay identity.\n# TYPE once_relay_info gauge\n"
        << "once_relay_info{name=\"" << escape_label_value(relay_name) << "\"} 1\n";
    counter("once_relay_published_total", "Messages handed to the sink.", published.load());
    counter("once_relay_acked_total", "Messages delivered and acknowledged in the outbox.", acked.load());
    counter("once_relay_nacked_total", "Messages given back to the outbox with once.nack (sink failures, held back behind a failed key, unsent at a stop).", nacked.load());
    counter("once_relay_dead_total", "Messages the sink refused permanently (dead-lettered).", dead.load());
    counter("once_relay_given_back_total", "Locked claim mode: claimed messages whose transaction rolled back (lost connection, failed COMMIT, shutdown bound); the outbox has them back untouched.", given_back.load());
    counter("once_relay_batches_total", "Non-empty claims.", batches.load());
    counter("once_relay_reconnects_total", "Database reconnections.", reconnects.load());
    counter("once_wal_written_back_total", "WAL transport: messages the sink refused or could not take, written back to the outbox table.", wal_written_back.load());
    counter("once_wal_unauthentic_total", "WAL transport: pg_once messages whose tag did not verify (not emitted by once.send in their transaction) or longer than once.send writes, skipped.", wal_unauthentic.load());
    counter("once_wal_malformed_total", "WAL transport: pg_once messages that do not decode, skipped.", wal_malformed.load());
    counter("once_wal_stream_restarts_total", "WAL transport: replication connections re-opened after a failure.", wal_stream_restarts.load());
    if (int64_t active = wal_stream_active.load(); active >= 0) {
        counter("once_wal_passed_over_total", "WAL transport: messages of topics this relay does not serve (--topics), passed over: the relay group serving them reads them from its own slot.", wal_passed_over.load());
        gauge("once_wal_write_backs_waiting", "WAL transport: write-backs waiting for their key's lock (held by a prepared transaction, say), retried every second; the stream goes on, confirmed up to before them.", std::to_string(wal_write_backs_waiting.load()));
        gauge("once_wal_stream_active", "WAL transport: 1 while this relay streams the slot, 0 while it stands by (another relay of the group streams it) or reopens the stream.", std::to_string(active));
    }
    if (int64_t lag = wal_slot_lag_bytes.load(); lag >= 0)
        gauge("once_wal_slot_lag_bytes", "WAL transport: WAL bytes the slot retains (pg_current_wal_lsn() - confirmed_flush_lsn), read with the outbox gauges.", std::to_string(lag));
    if (int v = wal_slot_verdict.load(); v >= 0) {
        gauge("once_wal_slot_invalidated", "WAL transport: 1 when the slot is missing or PostgreSQL invalidated it (the stream is closed, /healthz fails; recreate it with --create-wal-slot).",
              v == 1 || v == 2 ? "1" : "0");
        gauge("once_wal_newer_format", "WAL transport: the format version of a message this relay cannot read (a newer pg_once's), which the stream stopped before (/healthz fails; upgrade once-relay); 0 when none.",
              std::to_string(wal_newer_format.load()));
        gauge("once_wal_failover_refused", "WAL transport: 1 when the stream is refused because the server (before 17) has physical standbys that cannot keep the slot (see --wal-accept-slot-loss-on-failover).",
              v == 3 ? "1" : "0");
    }
    if (int64_t t = wal_oldest_pending_commit_us.load(); t >= 0) {
        double lag = 0;
        if (t > 0) {
            int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::system_clock::now().time_since_epoch()).count();
            lag = std::max<double>(0, (now_us - t) / 1e6);
        }
        gauge("once_wal_slot_lag_seconds", "WAL transport: age of the commit of the oldest transaction received and not confirmed yet (0 when nothing is pending).", fmt_double(lag));
    }
    gauge("once_relay_in_flight", "Publishes awaiting the sink's answer.", std::to_string(in_flight.load()));
    gauge("once_relay_last_claim_timestamp_seconds", "Unix time of the last successful claim.",
          fmt_double(last_claim_unix_ms.load() / 1000.0));
    gauge("once_relay_db_up", "1 when connected to the database.", db_connected.load() ? "1" : "0");
    gauge("once_relay_sink_up", "1 when the sink is reachable.", sink_connected.load() ? "1" : "0");
    out << "# HELP once_relay_publish_latency_seconds Publish to sink acknowledgement.\n"
        << "# TYPE once_relay_publish_latency_seconds histogram\n"
        << publish_latency.render("once_relay_publish_latency_seconds");
    if (outbox_gauges_enabled) out << render_outbox_gauges(outbox_gauges());
    out << render_inbound_metrics(inbound);
    return out.str();
}

}  // namespace once::relay
