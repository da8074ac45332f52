// The relay loop: LISTEN -> claim -> publish -> settle (ack/nack/dead) -> claim again after
// any non-empty batch -> when a claim comes back empty, wait for a wake-up, the poll
// interval, a timer or a signal. One thread, one poll() call site, the loop's state in this
// object; what a batch decides (order per key, holding back, leases) lives in Batch, and each
// claim source is its own type (claim/), all driven alike by one loop step
// (claim/claim_source.hpp): the outbox table (claim/table_claims.hpp) in either claim mode,
// and with --transport wal the WAL stream beside it (claim/wal_stream.hpp). Overlapped
// batches and the claim modes: docs/design.md, "The loop in detail".
#pragma once

#include "batch.hpp"
#include "claim/locked_lanes.hpp"
#include "claim/table_claims.hpp"
#include "claim/wal_stream.hpp"
#include "outbox/locked_tx.hpp"
#include "metrics.hpp"
#include "options.hpp"
#include "outage.hpp"
#include "signals.hpp"
#include "sinks/sink.hpp"
#include "outbox/source_db.hpp"
#include "systemd_notify.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
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

    // What the relay talks to besides the sink, replaceable by fakes (the loop's unit tests).
    struct Wiring {
        std::unique_ptr<OutboxSession> db;                        // the LISTEN connection
        std::function<std::unique_ptr<PgLockedTx>()> leased_claim_connection;   // null: claims on db
        LockedLanes::TxFactory locked_tx;                         // one locked lane's transaction
        // --transport wal: the replication stream and the write-back connection (else null).
        std::unique_ptr<wal::WalReader> wal_reader;
        std::unique_ptr<WalStore> wal_store;
    };
    // The wiring the daemon uses: libpq connections made from `options`.
    static Wiring libpq_wiring(const Options& options);
    Relay(Options options, Reloader reloader, std::unique_ptr<Sink> sink, Metrics& metrics, SignalFd& signals,
          SystemdNotifier& notifier, Wiring wiring);
    // Runs until SIGTERM/SIGINT; returns the process exit code.
    int run();

private:
    void step();                            // one turn of the loop, every source alike (may throw DbLost)
    bool may_claim(const ClaimSource& source) const;
    void claim_from_each();                 // a claim from every source that may
    void open_answers(ClaimSource& source); // a batch for each answer with messages
    void dispatch();
    void wait_and_process();                // the one poll(): sink, database socket, signals, timers
    void apply(std::vector<Outcome>& outcomes);
    // The sink's outcomes of one wait: cleared by apply, kept with its capacity (allocated
    // anew per wait, a vector of a thousand outcomes kept the allocator consolidating).
    std::vector<Outcome> outcomes_;
    void on_settled(const ClaimSource& source, const SettleOutcome& o);  // a batch given back: back off
    void want_claim();                      // something may be claimable: every source claims again soon
    std::vector<Batch*> open_batches();     // oldest first, of every source
    size_t open_count() const;
    std::vector<ClaimSource*> sources() const;   // every claim source the relay has
    void drain_deadline_check();
    void stop_batches(const std::string& why, Clock::time_point deadline);

    void connect_db();
    void on_db_lost(const std::string& why);
    void poll_signals();
    void handle_reload();
    void maintenance();
    bool maintenance_lock_held(Clock::time_point now);
    void log_stats(bool force);
    void sink_health(bool ready);           // logs a sink outage's start and end
    int64_t ms_until(Clock::time_point t) const;


    Options opt_;
    Reloader reloader_;
    std::unique_ptr<Sink> sink_;
    Metrics& metrics_;
    SignalFd& signals_;
    SystemdNotifier& notifier_;
    std::unique_ptr<OutboxSession> db_;
    Wiring wiring_;                         // (for the connections made later)
    std::unique_ptr<TableClaims> table_;    // the outbox table: locked lanes or leased claims
    std::unique_ptr<WalStream> wal_;        // --transport wal: beside the table
    std::mt19937_64 rng_;

    SignalEvents events_;
    bool stopping_ = false;
    bool ready_sent_ = false;
    bool sink_ready_ = false;
    bool ever_connected_ = false;
    int connect_failures_ = 0;
    int failures_logged_ = 0;               // sink errors logged at warn since the last claim
    Clock::time_point reconnect_at_{};
    Clock::time_point next_purge_{};
    Clock::time_point next_saga_tick_{};
    std::optional<Clock::time_point> maintenance_denied_since_;  // another session holds the timer lock
    bool maintenance_denied_logged_ = false;
    Clock::time_point next_stats_{};
    Clock::time_point stop_deadline_{};
    Clock::time_point drain_deadline_{};    // stopping or database lost: bound for in-flight work
    uint64_t next_token_ = 1;
    MetricsSnapshot stats_from_;            // the log summary is the metrics' difference
    Outage sink_outage_;
    Outage db_outage_;
    bool delivered_since_down_ = false;     // a delivery since the sink went down (HTTP: it is back)
    std::string last_sink_error_;           // the latest failed publish, and when: an outage's reason
    Clock::time_point last_sink_error_at_{};
    Clock::time_point stats_since_;
};

}  // namespace once::relay
