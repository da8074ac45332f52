// /metrics (Prometheus text) and /healthz over libmicrohttpd, on its own internal thread.
#pragma once

#include "metrics.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace once::relay {

class HttpListener;

// Limits of the metrics listener (http_listener.hpp). A request must arrive whole within
// kMetricsRequestTimeout (slow or idle clients cannot hold the server); up to
// kMetricsConnectionLimit connections are served at once (a handful of idle clients must not
// leave /healthz unreachable), at most kMetricsConnectionsPerAddress from one
// address: one Prometheus and a few probes need a handful, and one address cannot take all.
constexpr std::chrono::milliseconds kMetricsRequestTimeout{5000};
constexpr unsigned kMetricsConnectionLimit = 256;
constexpr unsigned kMetricsConnectionsPerAddress = 32;

class MetricsServer {
public:
    // Binds host:port (host must be a numeric IPv4/IPv6 address or "localhost"). Throws
    // std::runtime_error when the address is invalid or in use.
    MetricsServer(const std::string& address, const Metrics& metrics, std::string relay_name);
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;
    int port() const;

    const Metrics& metrics() const { return metrics_; }
    const std::string& relay_name() const { return relay_name_; }

private:
    const Metrics& metrics_;
    std::string relay_name_;
    std::unique_ptr<HttpListener> listener_;
};

}  // namespace once::relay
