// Reads the outbox gauges of /metrics (once.relay_topic_gauges(), once.relay_saga_gauges())
// on a connection and a thread of its own, so a slow read never holds up the relay loop, and
// hands each read to Metrics whole. Runs only with --metrics.
//
// Cost bound: a read every kGaugeInterval, or less often when reads are slow: the next read
// starts at least 20 times the last read's duration later, so the reads take at most 5 % of
// one server backend. Each read is bounded by the SQL functions' limits and by a 10 s
// statement_timeout.
#pragma once

#include "duration.hpp"
#include "metrics.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

typedef struct pg_conn PGconn;
typedef struct pg_cancel PGcancel;

namespace once::relay {

constexpr std::chrono::seconds kGaugeInterval{15};

// When the read after one that took `took` may start: kGaugeInterval, or 20 times `took`.
std::chrono::milliseconds next_gauge_read_in(std::chrono::milliseconds took);

class GaugeReader {
public:
    // `wal_slot`: --transport wal's slot, whose lag in bytes (once_wal_slot_lag_bytes) is read
    // with the gauges; empty: none.
    GaugeReader(std::string conninfo, std::string relay_name, Millis connect_timeout, Metrics& metrics,
                std::string wal_slot = {});
    ~GaugeReader();   // stops the thread (an open read is cancelled)
    GaugeReader(const GaugeReader&) = delete;
    GaugeReader& operator=(const GaugeReader&) = delete;

private:
    void run();
    bool read_once();   // false: the read failed (logged)
    void read_wal_slot_lag();
    void disconnect();

    std::string conninfo_;
    std::string name_;
    Millis connect_timeout_;
    std::string wal_slot_;
    Metrics& metrics_;
    PGconn* conn_ = nullptr;
    PGcancel* cancel_ = nullptr;   // (guarded by mu_) cancels a read at destruction
    bool failing_ = false;      // the last read failed (its reason was logged once)
    bool missing_ = false;      // the database's pg_once has no gauge functions (logged once)
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> stop_{false};   // (set under mu_)
    std::thread thread_;
};

}  // namespace once::relay
