#include "metrics.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

using namespace once::relay;

TEST(Metrics, PrometheusText) {
    Metrics m;
    m.published = 10;
    m.acked = 8;
    m.nacked = 1;
    m.dead = 1;
    m.given_back = 5;
    m.batches = 2;
    m.reconnects = 3;
    m.in_flight = 4;
    m.last_claim_unix_ms = 1700000000500;
    m.publish_latency.observe(0.0007);
    m.publish_latency.observe(0.2);
    m.publish_latency.observe(60);
    std::string t = m.render_prometheus("r1");
    for (const char* line : {"once_relay_published_total 10\n", "once_relay_acked_total 8\n", "once_relay_nacked_total 1\n",
                             "once_relay_dead_total 1\n", "once_relay_given_back_total 5\n", "once_relay_batches_total 2\n", "once_relay_reconnects_total 3\n",
                             "once_relay_in_flight 4\n", "once_relay_last_claim_timestamp_seconds 1700000000.5\n",
                             "# TYPE once_relay_acked_total counter\n", "# TYPE once_relay_in_flight gauge\n",
                             "# TYPE once_relay_publish_latency_seconds histogram\n",
                             "once_relay_publish_latency_seconds_bucket{le=\"0.0005\"} 0\n",
                             "once_relay_publish_latency_seconds_bucket{le=\"0.001\"} 1\n",
                             "once_relay_publish_latency_seconds_bucket{le=\"0.25\"} 2\n",
                             "once_relay_publish_latency_seconds_bucket{le=\"10\"} 2\n",
                             "once_relay_publish_latency_seconds_bucket{le=\"+Inf\"} 3\n",
                             "once_relay_publish_latency_seconds_count 3\n", "once_relay_info{name=\"r1\"} 1\n"})
        EXPECT_NE(t.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << t;
}

TEST(Metrics, HealthNeedsBoth) {
    Metrics m;
    EXPECT_FALSE(m.healthy());
    m.db_connected = true;
    EXPECT_FALSE(m.healthy());
    m.sink_connected = true;
    EXPECT_TRUE(m.healthy());
}

TEST(Metrics, HistogramBucketsAreCumulative) {
    LatencyHistogram h;
    for (int i = 0; i < 5; ++i) h.observe(0.003);
    std::string t = h.render("x");
    EXPECT_NE(t.find("x_bucket{le=\"0.0025\"} 0\n"), std::string::npos);
    EXPECT_NE(t.find("x_bucket{le=\"0.005\"} 5\n"), std::string::npos);
    EXPECT_NE(t.find("x_bucket{le=\"10\"} 5\n"), std::string::npos);
    EXPECT_NE(t.find("x_sum 0.015\n"), std::string::npos) << t;
}

// Every value with full precision: with %.6g a timestamp moves in steps of 10,000 s, so
// "alert when it stops moving" could not fire.
TEST(Metrics, ValuesKeepFullPrecision) {
    EXPECT_EQ(format_metric_value(1700000000), "1700000000");
    EXPECT_EQ(format_metric_value(1700000001), "1700000001");
    EXPECT_EQ(format_metric_value(1712345678.123), "1712345678.123");
    EXPECT_EQ(format_metric_value(1712345678.001), "1712345678.001");
    EXPECT_EQ(format_metric_value(0), "0");
    EXPECT_EQ(format_metric_value(-3), "-3");
    EXPECT_EQ(format_metric_value(0.0005), "0.0005");
    EXPECT_EQ(format_metric_value(0.015), "0.015");
    EXPECT_EQ(format_metric_value(1e-9), "1e-09");
    EXPECT_EQ(format_metric_value(9007199254740991.0), "9007199254740991");
    EXPECT_EQ(std::stod(format_metric_value(0.1 + 0.2)), 0.1 + 0.2);   // reads back as the same double
    EXPECT_EQ(std::stod(format_metric_value(1e300)), 1e300);
    EXPECT_EQ(format_metric_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
    EXPECT_EQ(format_metric_value(std::numeric_limits<double>::infinity()), "+Inf");
    EXPECT_EQ(format_metric_value(-std::numeric_limits<double>::infinity()), "-Inf");

    Metrics m;
    m.last_claim_unix_ms = 1700000012345;   // 12.345 s after the previous step of %.6g
    EXPECT_NE(m.render_prometheus("r").find("once_relay_last_claim_timestamp_seconds 1700000012.345\n"), std::string::npos);
    m.last_claim_unix_ms = 1700000013000;
    EXPECT_NE(m.render_prometheus("r").find("once_relay_last_claim_timestamp_seconds 1700000013\n"), std::string::npos);
}

TEST(Metrics, LabelValuesEscaped) {
    EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    Metrics m;
    EXPECT_NE(m.render_prometheus("x\"y").find("once_relay_info{name=\"x\\\"y\"} 1\n"), std::string::npos);
}

namespace {
TopicGauge topic(const std::string& name, int64_t ready, int64_t dead = 0, double age = 0, bool capped = false) {
    TopicGauge t;
    t.topic = name;
    t.ready = ready;
    t.dead = dead;
    t.oldest_ready_age = age;
    t.capped = capped;
    return t;
}
}  // namespace

TEST(OutboxGauges, FewTopicsAllLabelledByName) {
    auto shown = cap_topic_labels({topic("b", 1), topic("a", 2)}, 3);
    ASSERT_EQ(shown.size(), 2u);
    EXPECT_EQ(shown[0].topic, "a");
    EXPECT_EQ(shown[1].topic, "b");
}

TEST(OutboxGauges, LargestBacklogsKeepTheirLabelsTheRestAreSummed) {
    auto shown = cap_topic_labels({topic("small", 1, 0, 5), topic("big", 100), topic("dead", 0, 50),
                                   topic("tiny", 0, 1, 90, true), topic("mid", 10)},
                                  3);
    ASSERT_EQ(shown.size(), 4u);
    EXPECT_EQ(shown[0].topic, "big");
    EXPECT_EQ(shown[1].topic, "dead");
    EXPECT_EQ(shown[2].topic, "mid");
    EXPECT_EQ(shown[3].topic, kOtherTopic);
    EXPECT_EQ(shown[3].ready, 1);
    EXPECT_EQ(shown[3].dead, 1);
    EXPECT_EQ(shown[3].oldest_ready_age, 90);
    EXPECT_TRUE(shown[3].capped);
}

TEST(OutboxGauges, Rendered) {
    OutboxGauges g;
    EXPECT_EQ(render_outbox_gauges(g).find("once_outbox_ready"), std::string::npos);   // nothing read yet
    EXPECT_NE(render_outbox_gauges(g).find("once_outbox_gauges_timestamp_seconds 0\n"), std::string::npos);
    g.read_unix_ms = 1700000000250;
    g.read_seconds = 0.004;
    TopicGauge t = topic("orders.created", 12, 3, 61.5);
    t.delayed = 4;
    t.in_flight = 5;
    t.blocked = 6;
    g.topics.push_back(t);
    for (int i = 0; i < 30; ++i) g.topics.push_back(topic("t" + std::to_string(i), 0));
    g.sagas.push_back(SagaGauge{"failed", 7, false});
    Metrics m;
    m.outbox_gauges_enabled = true;
    m.set_outbox_gauges(g);
    std::string text = m.render_prometheus("r");
    for (const char* line : {"once_outbox_gauges_timestamp_seconds 1700000000\n", "once_outbox_gauges_read_seconds 0.004\n",
                             "once_outbox_topics 31\n", "# TYPE once_outbox_ready gauge\n",
                             "once_outbox_ready{topic=\"orders.created\"} 12\n",
                             "once_outbox_delayed{topic=\"orders.created\"} 4\n",
                             "once_outbox_in_flight{topic=\"orders.created\"} 5\n",
                             "once_outbox_blocked{topic=\"orders.created\"} 6\n",
                             "once_outbox_dead{topic=\"orders.created\"} 3\n",
                             "once_outbox_oldest_ready_age_seconds{topic=\"orders.created\"} 61.5\n",
                             "once_outbox_count_capped{topic=\"orders.created\"} 0\n",
                             "once_outbox_ready{topic=\"(other)\"} 0\n", "once_sagas{status=\"failed\"} 7\n"})
        EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << text;
    // kTopicLabelCap topics and "(other)": 21 series per metric, not 31.
    size_t n = 0;
    for (size_t p = text.find("\nonce_outbox_ready{"); p != std::string::npos; p = text.find("\nonce_outbox_ready{", p + 1)) ++n;
    EXPECT_EQ(n, kTopicLabelCap + 1);
    m.outbox_gauges_enabled = false;   // without --metrics' reader: no outbox gauges at all
    EXPECT_EQ(m.render_prometheus("r").find("once_outbox"), std::string::npos);
}
