#include "outbox_gauges.hpp"

#include "metrics.hpp"

#include <algorithm>
#include <sstream>

namespace once::relay {

std::vector<TopicGauge> cap_topic_labels(std::vector<TopicGauge> topics, size_t cap) {
    if (topics.size() <= cap) {
        std::sort(topics.begin(), topics.end(), [](const TopicGauge& a, const TopicGauge& b) { return a.topic < b.topic; });
        return topics;
    }
    std::sort(topics.begin(), topics.end(), [](const TopicGauge& a, const TopicGauge& b) {
        if (a.backlog() != b.backlog()) return a.backlog() > b.backlog();
        return a.topic < b.topic;
    });
    TopicGauge other;
    other.topic = kOtherTopic;
    for (size_t i = cap; i < topics.size(); ++i) {
        const TopicGauge& t = topics[i];
        other.ready += t.ready;
        other.delayed += t.delayed;
        other.in_flight += t.in_flight;
        other.blocked += t.blocked;
        other.dead += t.dead;
        other.oldest_ready_age = std::max(other.oldest_ready_age, t.oldest_ready_age);
        other.capped = other.capped || t.capped;
    }
    topics.resize(cap);
    std::sort(topics.begin(), topics.end(), [](const TopicGauge& a, const TopicGauge& b) { return a.topic < b.topic; });
    topics.push_back(std::move(other));
    return topics;
}

std::string render_outbox_gauges(const OutboxGauges& g) {
    std::ostringstream out;
    auto head = [&](const char* name, const char* help) {
        out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
    };
    head("once_outbox_gauges_timestamp_seconds",
         "Unix time of the last read of the outbox gauges (once.relay_topic_gauges); 0 before the first.");
    out << "once_outbox_gauges_timestamp_seconds " << format_metric_value(static_cast<double>(g.read_unix_ms / 1000)) << "\n";
    if (g.read_unix_ms == 0) return out.str();
    head("once_outbox_gauges_read_seconds", "How long the last read of the outbox gauges took.");
    out << "once_outbox_gauges_read_seconds " << format_metric_value(g.read_seconds) << "\n";
    head("once_outbox_topics", "Topics with messages in the outbox (at most 500 are looked at).");
    out << "once_outbox_topics " << g.topics.size() << "\n";

    std::vector<TopicGauge> shown = cap_topic_labels(g.topics);
    struct Series {
        const char* name;
        const char* help;
        double (*value)(const TopicGauge&);
    };
    const Series series[] = {
        {"once_outbox_ready", "Messages due for delivery (counted up to 10000 per topic).",
         [](const TopicGauge& t) { return double(t.ready); }},
        {"once_outbox_delayed", "Messages not yet due: deliver_at or retry backoff (counted with ready and in flight up to 10000).",
         [](const TopicGauge& t) { return double(t.delayed); }},
        {"once_outbox_in_flight", "Messages claimed under a lease and not yet settled.",
         [](const TopicGauge& t) { return double(t.in_flight); }},
        {"once_outbox_blocked", "Messages waiting behind their key's head (counted up to 10000 per topic).",
         [](const TopicGauge& t) { return double(t.blocked); }},
        {"once_outbox_dead", "Dead letters (counted up to 10000 per topic).",
         [](const TopicGauge& t) { return double(t.dead); }},
        {"once_outbox_oldest_ready_age_seconds", "Age of the oldest message due for delivery; 0 when none is.",
         [](const TopicGauge& t) { return t.oldest_ready_age; }},
        {"once_outbox_count_capped", "1 when a count of this topic reached its bound (the value is then a lower bound).",
         [](const TopicGauge& t) { return t.capped ? 1.0 : 0.0; }},
    };
    for (const Series& s : series) {
        head(s.name, s.help);
        for (const TopicGauge& t : shown)
            out << s.name << "{topic=\"" << escape_label_value(t.topic) << "\"} " << format_metric_value(s.value(t)) << "\n";
    }
    head("once_sagas", "Sagas per status (counted up to 10000 per status).");
    for (const SagaGauge& s : g.sagas)
        out << "once_sagas{status=\"" << escape_label_value(s.status) << "\"} " << s.sagas << "\n";
    return out.str();
}

}  // namespace once::relay
