#include "http_listener.hpp"
#include "metrics_server.hpp"

#include <gtest/gtest.h>

using once::relay::is_loopback_host;

// Decides whether the relay warns that /metrics and /healthz are exposed.
TEST(MetricsServer, LoopbackAddresses) {
    for (const char* h : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "localhost"})
        EXPECT_TRUE(is_loopback_host(h)) << h;
    for (const char* h : {"0.0.0.0", "::", "10.0.0.1", "192.168.1.5", "128.0.0.1", "::ffff:10.0.0.1", "fe80::1", ""})
        EXPECT_FALSE(is_loopback_host(h)) << h;
}
