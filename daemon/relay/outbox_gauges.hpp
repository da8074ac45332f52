// The outbox's state as /metrics shows it: per topic ready, delayed, in flight, blocked, dead
// and the oldest ready message's age, and sagas per status. GaugeReader (outbox/gauge_reader)
// reads them from once.relay_topic_gauges() / once.relay_saga_gauges(); this file holds what
// is done with them (capping the topic labels, the Prometheus text), without a database.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace once::relay {

// At most this many topics get their own label; the rest are summed under kOtherTopic.
constexpr size_t kTopicLabelCap = 20;
// The label of the sum of the other topics. Parentheses are not allowed in topic names, so
// no topic can be called that.
constexpr const char* kOtherTopic = "(other)";

struct TopicGauge {
    std::string topic;
    int64_t ready = 0, delayed = 0, in_flight = 0, blocked = 0, dead = 0;
    double oldest_ready_age = 0;   // seconds; 0 when nothing is ready
    bool capped = false;           // a count reached the database function's bound
    int64_t backlog() const { return ready + delayed + in_flight + blocked + dead; }
};

struct SagaGauge {
    std::string status;
    int64_t sagas = 0;
    bool capped = false;
};

struct OutboxGauges {
    std::vector<TopicGauge> topics;   // as read (every topic the function returned)
    std::vector<SagaGauge> sagas;
    int64_t read_unix_ms = 0;         // 0: never read
    double read_seconds = 0;          // how long the last read took
};

// The `cap` topics with the largest backlog (ties: by name), sorted by name, then, if any
// are left, one kOtherTopic entry summing them (counts added, the oldest age the largest,
// capped if any was).
std::vector<TopicGauge> cap_topic_labels(std::vector<TopicGauge> topics, size_t cap = kTopicLabelCap);

// Prometheus text of the gauges (nothing but the read's timestamp before the first read).
std::string render_outbox_gauges(const OutboxGauges& g);

}  // namespace once::relay
