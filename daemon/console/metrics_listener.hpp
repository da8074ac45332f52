// once-console's /metrics listener (--metrics-listen): a libmicrohttpd listener of its own,
// apart from the pages, without authentication (like once-relay's --metrics: Prometheus
// scrapes from a trusted network; a non-loopback address is warned about at start). Each
// scrape reads the database (db_metrics.hpp) on the listener's one thread and connection.
#pragma once

#include "db.hpp"

#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace once::relay {
class HttpListener;
}

namespace once::console {

class MetricsListener {
public:
    // Throws std::runtime_error when the address is invalid or cannot be bound.
    MetricsListener(const std::string& address, DbConfig db);
    ~MetricsListener();
    MetricsListener(const MetricsListener&) = delete;
    MetricsListener& operator=(const MetricsListener&) = delete;
    int port() const;
    std::string scrape();   // the /metrics body

private:
    DbConfig db_;
    std::mutex mu_;
    std::set<std::string> seen_topics_;
    std::string database_;   // the last read's, for once_db_up 0 when a read fails
    bool failing_ = false;
    std::unique_ptr<relay::HttpListener> listener_;
};

}  // namespace once::console
