#include "inbound/inbound_metrics.hpp"

#include <sstream>

namespace once::relay {

std::string render_inbound_metrics(const InboundMetrics& m) {
    if (!m.enabled.load()) return {};
    std::ostringstream out;
    auto line = [&](const char* name, const char* type, const char* help, const std::string& v) {
        out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << v << "\n";
    };
    line("once_inbound_consumer_pending", "gauge",
         "Inbound: messages of the stream the JetStream consumer has not delivered yet (its lag; -1 until read).",
         std::to_string(m.consumer_pending.load()));
    line("once_inbound_consumer_ack_pending", "gauge",
         "Inbound: messages the consumer delivered that are not acknowledged yet (-1 until read).",
         std::to_string(m.consumer_ack_pending.load()));
    line("once_inbound_held", "gauge", "Inbound: messages fetched and not settled yet (waiting for their key, in the inbox, or retrying).",
         std::to_string(m.held.load()));
    line("once_inbound_delivered_total", "counter", "Inbound: messages the inbox processed (handlers committed), then acknowledged.",
         std::to_string(m.delivered.load()));
    line("once_inbound_duplicates_total", "counter",
         "Inbound: messages the inbox answered duplicate (processed before: a redelivery or a second publish), acknowledged.",
         std::to_string(m.duplicates.load()));
    line("once_inbound_poison_total", "counter",
         "Inbound: messages the inbox answered poison (failed max_attempts times; kept in the inbox for once.inbox_retry), acknowledged.",
         std::to_string(m.poison.load()));
    line("once_inbound_retries_total", "counter",
         "Inbound: inbox attempts to be repeated (a handler failed, no handler subscribed, the database was unreachable).",
         std::to_string(m.retries.load()));
    line("once_inbound_fences_total", "counter",
         "Inbound: times new messages waited for earlier deliveries to come back (start with unacknowledged messages, a lost delivery), for per-key order.",
         std::to_string(m.fences.load()));
    return out.str();
}

}  // namespace once::relay
