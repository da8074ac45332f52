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
#include "claim/lane_state.hpp"
#include "duration.hpp"
#include "outbox/locked_tx.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct pollfd;

namespace once::relay {

class LockedLanes {
public:
    using Clock = std::chrono::steady_clock;
    // Makes one lane's transaction connection (not connected yet).
    using TxFactory = std::function<std::unique_ptr<LockedTx>()>;

    // A claim's answer, taken by collect_claims().
    struct Answer {
        size_t lane;
        std::vector<Message> messages;   // empty: the lane is idle again
        uint64_t claim_wants;            // what claim_wants was when the claim was sent
    };

    // A settlement's answer, handed to settle_finished's callback.
    struct Settled {
        LockedSettle result;
        size_t batch_size;
    };

    // `publish_limit`: how long after its claim a batch is still handed to the sink
    // (outbox/locked_hold_bound.hpp).
    LockedLanes(size_t lanes, TxFactory make_tx, Millis publish_limit);

    // Connects every lane not connected. Returns false when the database has no
    // once.claim_locked (pg_once SQL before 0.2): the lanes are dropped, the caller leases.
    // Throws DbLost.
    bool connect();

    LaneState state(size_t lane) const { return lanes_[lane].state; }
    size_t size() const { return lanes_.size(); }

    // A claim may go out: no open batch still has messages to hand to the sink, a lane is
    // idle, and, beside a claim already out, only while a backlog drains (`draining`: the last
    // answer brought messages): on a wake-up one claim takes what there is, a second one
    // would mostly come back empty.
    bool may_claim(bool draining) const;
    // Sends a claim on the first idle lane. Throws DbLost.
    void start_claim(int batch, const std::vector<std::string>& topics, uint64_t claim_wants);
    // Takes every claim answer that has arrived; each lane answered is idle (empty answer)
    // or holds its claimed transaction until open_batch() or rollback(). Throws DbLost, or
    // std::runtime_error when the server refused a claim.
    std::vector<Answer> collect_claims();
    // The answered lane publishes `batch` (its messages, numbered by the relay).
    void open_batch(size_t lane, Batch batch);
    // The answered lane gives its claim back untouched (claimed while the relay was stopping).
    void rollback(size_t lane);

    // Stops handing to the sink the batches claimed longer than the publish limit ago; returns
    // how many were stopped.
    size_t stop_overdue(Clock::time_point now);
    // Sends the settlement of every finished batch, and hands each one the database has
    // answered to `on_settled` (the lane is idle by then). An exception from `on_settled`
    // ends the pass; the other lanes are looked at in a later one.
    void settle_finished(const std::function<void(Settled&)>& on_settled);
    // Rolls back every lane (batches and claims out): the outbox has all of it back. Returns
    // how many claimed messages went back. With `connection_lost`, the connections are
    // closed as well (the database went away: they reconnect with it).
    size_t give_back_all(const std::string& why, bool connection_lost);

    void open_batches(std::vector<Batch*>& out);
    size_t open_count() const;            // lanes not idle: a claim out may bring messages
    bool settlement_due() const;          // a finished batch waits to be sent: do not sleep
    void poll_fds(std::vector<pollfd>& fds) const;   // claims and settlements out: their answers

private:
    struct Lane {
        std::unique_ptr<LockedTx> tx;
        LaneState state = LaneState::idle;
        std::optional<Batch> batch;                   // publishing, settling
        std::optional<Batch::Settlement> settlement;  // settling: what went out with the COMMIT
        uint64_t claim_wants = 0;
    };
    void give_back(Lane& lane, const std::string& why);

    size_t lane_count_;
    TxFactory make_tx_;
    Millis publish_limit_;
    std::vector<Lane> lanes_;
};

}  // namespace once::relay
