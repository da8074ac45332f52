#include "metrics.hpp"

#include <gtest/gtest.h>

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
                             "once_relay_in_flight 4\n", "once_relay_last_claim_timestamp_seconds 1.7e+09\n",
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
