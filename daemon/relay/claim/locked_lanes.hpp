// The locked claim mode (--claim-mode locked) as its own type: a fixed number of lanes, each
// a transaction connection (LockedTx) and the one batch open on it. A lane's claim is
// BEGIN + once.claim_locked, its settlement ack/nack/dead + COMMIT; both are sent without
// waiting, and their answers are taken when they have arrived. The lock is the lease: a lane
// whose transaction fails or whose connection goes gives its batch back, untouched, to the
// outbox.
//
// The relay decides when to claim and what to do with an answer (it knows about stopping,
// wake-ups and metrics); this type keeps each lane's state (claim/lane_state.hpp) and talks
// to the transactions. Unit-tested with fake transactions (tests/unit/daemon/locked_lanes_test).
#pragma once

#include "batch.hpp"
#include "claim/claim_source.hpp"
#include "claim/lane_state.hpp"
#include "duration.hpp"
#include "metrics.hpp"
#include "outbox/locked_tx.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct pollfd;

namespace once::relay {

class LockedLanes final : public ClaimSource {
public:
    // Makes one lane's transaction connection (not connected yet).
    using TxFactory = std::function<std::unique_ptr<LockedTx>()>;

    // `publish_limit`: how long after its claim a batch is still handed to the sink
    // (outbox/locked_hold_bound.hpp). `metrics`: acked, nacked and dead counts of commits.
    LockedLanes(size_t lanes, TxFactory make_tx, Millis publish_limit, Metrics& metrics);
    ClaimMode mode() const override { return ClaimMode::locked; }

    // Connects every lane not connected. Returns false when the database has no
    // once.claim_locked (pg_once SQL before 0.2): the lanes are dropped, the caller leases.
    // Throws DbLost.
    bool connect();

    LaneState state(size_t lane) const { return lanes_[lane].state; }
    size_t size() const { return lanes_.size(); }

    // A claim may go out: no open batch still has messages to hand to the sink, a lane is
    // idle, and, beside a claim already out, only while a backlog drains (the last answer
    // brought messages): on a wake-up one claim takes what there is, a second one would
    // mostly come back empty.
    bool may_claim() const override;
    // Sends a claim on the first idle lane. Throws DbLost.
    void start_claim(const ClaimRequest& request) override;
    // Takes every claim answer that has arrived; each lane answered is idle (empty answer)
    // or holds its claimed transaction until open_batch() or give_back_unopened(). Throws
    // DbLost, or std::runtime_error when the server refused a claim.
    std::vector<ClaimAnswer> collect_claims() override;
    // The answered lane publishes `batch` (its messages, numbered by the relay).
    void open_batch(size_t lane, Batch batch) override;
    // The answered lane rolls its claim back: the messages are back untouched.
    bool give_back_unopened(size_t lane, std::vector<Message>& messages) override;
    // stop_overdue, with a warning.
    void keep_claims(Clock::time_point now) override;

    // Stops handing to the sink the batches claimed longer than the publish limit ago; returns
    // how many were stopped.
    size_t stop_overdue(Clock::time_point now);
    // Sends the settlement of every finished batch, and hands each one the database has
    // answered to `on_settled` (the lane is idle by then; committed ones are counted in the
    // metrics). An exception from `on_settled` ends the pass; the other lanes are looked at
    // in a later one.
    void settle_finished(const std::function<void(const SettleOutcome&)>& on_settled) override;
    // Rolls back every lane (batches and claims out): the outbox has all of it back. Returns
    // how many claimed messages went back. With `connection_lost`, the connections are
    // closed as well (the database went away: they reconnect with it).
    size_t give_back_all(const std::string& why, bool connection_lost);
    // A locked batch commits or rolls back whole: stopping lets it finish within the bound.
    void stop(const std::string&) override {}
    size_t abandon(const std::string& why) override { return give_back_all(why, false); }
    size_t database_lost(const std::string& why) override { return give_back_all(why, true); }

    void open_batches(std::vector<Batch*>& out) override;
    size_t open_count() const override;   // lanes not idle: a claim out may bring messages
    bool settlement_due() const override; // a finished batch waits to be sent: do not sleep
    void poll_fds(std::vector<pollfd>& fds) const override;   // claims and settlements out

private:
    struct Lane {
        std::unique_ptr<LockedTx> tx;
        LaneState state = LaneState::idle;
        std::optional<Batch> batch;                   // publishing, settling
        std::optional<Batch::Settlement> settlement;  // settling: what went out with the COMMIT
        uint64_t claim_wants = 0;
    };
    void give_back(Lane& lane, const std::string& why);
    void count_committed(const LockedSettle& r);

    size_t lane_count_;
    TxFactory make_tx_;
    Millis publish_limit_;
    Metrics& metrics_;
    std::vector<Lane> lanes_;
    bool draining_ = false;               // the last claim answered brought messages
};

}  // namespace once::relay
