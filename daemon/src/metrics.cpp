#include "metrics.hpp"

#include <cstdio>
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
std::string fmt_double(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}
}  // namespace

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
        << "once_relay_info{name=\"" << relay_name << "\"} 1\n";
    counter("once_relay_published_total", "Messages handed to the sink.", published.load());
    counter("once_relay_acked_total", "Messages delivered and acknowledged in the outbox.", acked.load());
    counter("once_relay_nacked_total", "Messages given back to the outbox with once.nack (sink failures, held back behind a failed key, unsent at a stop).", nacked.load());
    counter("once_relay_dead_total", "Messages the sink refused permanently (dead-lettered).", dead.load());
    counter("once_relay_given_back_total", "Locked claim mode: claimed messages whose transaction rolled back (lost connection, failed COMMIT, shutdown bound); the outbox has them back untouched.", given_back.load());
    counter("once_relay_batches_total", "Non-empty claims.", batches.load());
    counter("once_relay_reconnects_total", "Database reconnections.", reconnects.load());
    gauge("once_relay_in_flight", "Publishes awaiting the sink's answer.", std::to_string(in_flight.load()));
    gauge("once_relay_last_claim_timestamp_seconds", "Unix time of the last successful claim.",
          fmt_double(last_claim_unix_ms.load() / 1000.0));
    gauge("once_relay_db_up", "1 when connected to the database.", db_connected.load() ? "1" : "0");
    gauge("once_relay_sink_up", "1 when the sink is reachable.", sink_connected.load() ? "1" : "0");
    out << "# HELP once_relay_publish_latency_seconds Publish to sink acknowledgement.\n"
        << "# TYPE once_relay_publish_latency_seconds histogram\n"
        << publish_latency.render("once_relay_publish_latency_seconds");
    return out.str();
}

}  // namespace once::relay
