// The relay loop: LISTEN -> claim -> publish (pipelined) -> ack/nack -> repeat while full
// batches come back -> wait for a wake-up, the poll interval, a timer or a signal. One
// thread, one poll() call site per phase, all state in this object.
#pragma once

#include "metrics.hpp"
#include "options.hpp"
#include "signals.hpp"
#include "sinks/sink.hpp"
#include "source_db.hpp"
#include "systemd_notify.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace once::relay {

// Delay before reconnect attempt number `failures` (1 = first): capped exponential backoff
// from 100ms to `cap`, jittered by u in [0.5, 1) so a fleet of relays does not reconnect in step.
Millis reconnect_delay(int failures, Millis cap, double u);

class Relay {
public:
    using Clock = std::chrono::steady_clock;
    using Reloader = std::function<Options()>;   // re-reads argv + config file; throws if invalid

    Relay(Options options, Reloader reloader, std::unique_ptr<Sink> sink, Metrics& metrics, SignalFd& signals,
          SystemdNotifier& notifier);
    // Runs until SIGTERM/SIGINT; returns the process exit code.
    int run();

private:
    struct Slot;
    bool run_batch();                       // true when messages came back (claim again)
    void connect_db();
    void on_db_lost(const std::string& why);
    void wait_idle(Clock::time_point until);
    void poll_signals();
    void handle_reload();
    void maintenance();
    void flush_pending_acks();
    void log_stats(bool force);
    int64_t ms_until(Clock::time_point t) const;

    Options opt_;
    Reloader reloader_;
    std::unique_ptr<Sink> sink_;
    Metrics& metrics_;
    SignalFd& signals_;
    SystemdNotifier& notifier_;
    SourceDb db_;
    std::mt19937_64 rng_;

    SignalEvents events_;
    bool stopping_ = false;
    bool ready_sent_ = false;
    bool need_claim_ = true;
    bool ever_connected_ = false;
    int connect_failures_ = 0;
    Clock::time_point reconnect_at_{};
    Clock::time_point next_poll_{};
    Clock::time_point next_purge_{};
    Clock::time_point next_saga_tick_{};
    Clock::time_point next_stats_{};
    Clock::time_point stop_deadline_{};
    bool saga_tick_exists_ = true;
    std::vector<std::string> pending_acks_;   // delivered before the database went away
    uint64_t next_token_ = 1;
    uint64_t stats_acked_ = 0, stats_nacked_ = 0, stats_dead_ = 0;
    Clock::time_point stats_since_;
};

}  // namespace once::relay
