// Writes the relay's heartbeat (once.relay_heartbeat, docs/relay.md "Heartbeats") every
// --heartbeat-interval, on a connection and a thread of its own like the gauge reader, so a
// slow or unreachable database never holds up the relay loop. It reads the loop's state from
// Metrics (atomics) only. At a clean stop it writes a last beat with state 'stopped'.
#pragma once

#include "duration.hpp"
#include "metrics.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

typedef struct pg_conn PGconn;
typedef struct pg_cancel PGcancel;

namespace once::relay {

struct HeartbeatIdentity {
    std::string relay_name;
    std::string transport;   // "table" or "wal"
    std::string sink;        // the sink's describe(): no credentials
    Millis interval{10000};
};

class HeartbeatWriter {
public:
    HeartbeatWriter(std::string conninfo, Millis connect_timeout, HeartbeatIdentity id, const Metrics& metrics);
    ~HeartbeatWriter();   // stops the thread; after stopped_cleanly(), writes the 'stopped' beat
    // The relay ended on purpose (SIGTERM): the last beat says 'stopped'. A relay that ends
    // with an error leaves its last beat to age, like a crash.
    void stopped_cleanly() { stopped_cleanly_ = true; }
    HeartbeatWriter(const HeartbeatWriter&) = delete;
    HeartbeatWriter& operator=(const HeartbeatWriter&) = delete;

private:
    void run();
    bool beat(bool stopping);   // false: the beat failed (logged once until one succeeds)
    void disconnect();

    std::string conninfo_;
    Millis connect_timeout_;
    HeartbeatIdentity id_;
    const Metrics& metrics_;
    std::string host_;
    int pid_;
    double started_at_unix_;
    uint64_t last_acked_ = 0;
    std::chrono::steady_clock::time_point last_beat_at_;
    PGconn* conn_ = nullptr;
    PGcancel* cancel_ = nullptr;   // (guarded by mu_) cancels a beat at destruction
    bool failing_ = false;
    bool missing_ = false;         // the database's pg_once has no once.relay_heartbeat (logged once)
    bool stopped_cleanly_ = false;
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> stop_{false};   // (set under mu_)
    std::thread thread_;
};

}  // namespace once::relay
