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
#include <vector>

namespace once::relay {
class HttpListener;
}

namespace once::console {

class MetricsListener {
public:
    // Throws std::runtime_error when the address is invalid or cannot be bound.
    MetricsListener(const std::string& address, std::vector<DbConfig> dbs);
    ~MetricsListener();
    MetricsListener(const MetricsListener&) = delete;
    MetricsListener& operator=(const MetricsListener&) = delete;
    int port() const;
    std::string scrape();   // the /metrics body

private:
    struct Watched {
        DbConfig db;
        std::set<std::string> seen_topics;
        std::string database;   // the last read's name, for once_db_up 0 when a read fails
        bool failing = false;
    };
    std::mutex mu_;
    std::vector<Watched> dbs_;
    std::unique_ptr<relay::HttpListener> listener_;
};

}  // namespace once::console
