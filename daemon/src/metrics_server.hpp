// /metrics (Prometheus text) and /healthz over libmicrohttpd, on its own internal thread.
#pragma once

#include "metrics.hpp"

#include <string>

struct MHD_Daemon;

namespace once::relay {

class MetricsServer {
public:
    // Binds host:port (host must be a numeric IPv4/IPv6 address or "localhost"). Throws
    // std::runtime_error when the address is invalid or in use.
    MetricsServer(const std::string& address, const Metrics& metrics, std::string relay_name);
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;
    int port() const { return port_; }

    const Metrics& metrics() const { return metrics_; }
    const std::string& relay_name() const { return relay_name_; }

private:
    const Metrics& metrics_;
    std::string relay_name_;
    MHD_Daemon* daemon_ = nullptr;
    int port_ = 0;
};

}  // namespace once::relay
