// One interface for every way the relay takes messages from the outbox: the outbox table
// (claim/table_claims.hpp: its locked lanes, claim/locked_lanes.hpp, and leased claims,
// claim/leased_claims.hpp) and the WAL stream (claim/wal_stream.hpp). Batches come in (claims
// answered), settle outcomes go out (one per batch settled); in between the relay publishes
// the open batches through the sink. The relay drives every source alike, in one loop step.
//
// A source keeps its own connections and the state of each open batch, and says when it has
// room and reason to claim (may_claim: the table on a wake-up or the poll interval, the stream
// when messages are queued); the relay holds claims back while it stops or the sink is not
// ready, and numbers the messages for the sink.
#pragma once

#include "batch.hpp"
#include "claim/claim_mode.hpp"
#include "duration.hpp"
#include "message.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

struct pollfd;

namespace once::relay {

struct ClaimRequest {
    int batch;                          // messages at most
    Millis lease;                       // leased claims: how long they are held
    std::vector<std::string> topics;    // topic patterns; empty: all
    uint64_t claim_wants;               // the wake-up count when the claim is sent (TableClaims sets
                                        // it for the sources it drives)
    Millis poll_interval{0};            // a source that polls: claim again after this long anyway
};

struct ClaimAnswer {
    size_t lane;                        // where to open its batch (open_batch)
    std::vector<Message> messages;      // empty: nothing claimable
    uint64_t claim_wants;               // as in the request it answers
    const char* refused = nullptr;      // not to be published, and why (the database went away)
};

struct SettleOutcome {
    size_t batch_size = 0;
    bool given_back = false;            // the settlement failed: the outbox has the batch back
    bool connection_lost = false;       // given back because the connection broke: reconnect
    std::string error;                  // given back: why
};

class ClaimSource {
public:
    using Clock = std::chrono::steady_clock;
    virtual ~ClaimSource() = default;
    virtual ClaimMode mode() const = 0;

    // Work of the source's own at the start of every loop step (the WAL stream reads its
    // replication connection and confirms).
    virtual void pump(Clock::time_point /*now*/) {}
    // Something may be claimable (a NOTIFY on the outbox's channel, a reconnect): claim soon.
    virtual void wake() {}
    // Room and reason for a claim now (the relay also waits while it stops or the sink is not
    // ready).
    virtual bool may_claim() const = 0;
    // When a claim is due without a wake-up (the poll interval): the relay's poll() returns
    // by then. nullopt: none.
    virtual std::optional<Clock::time_point> claim_due() const { return std::nullopt; }
    // Sends a claim without waiting. Throws DbLost, or std::runtime_error when refused.
    virtual void start_claim(const ClaimRequest& request) = 0;
    // Every claim answer that has arrived. Throws like start_claim.
    virtual std::vector<ClaimAnswer> collect_claims() = 0;
    // The relay will not publish an answered claim (it is stopping): true when the source gave
    // it back untouched; false when the relay must open it, stopped, so it is settled as given
    // back. `messages` are the answer's (collect_claims may have moved them out of the source).
    virtual bool give_back_unopened(size_t lane, std::vector<Message>& messages) = 0;
    virtual void open_batch(size_t lane, Batch batch) = 0;

    // While batches publish: whatever keeps their claims valid and bounded (leases extended at
    // half time; a locked batch handed to the sink no longer than its publish limit).
    virtual void keep_claims(Clock::time_point now) = 0;
    // Settles what is finished; `on_settled` once per batch settled or given back (it may
    // throw: the pass ends there).
    virtual void settle_finished(const std::function<void(const SettleOutcome&)>& on_settled) = 0;

    // Publish nothing more (SIGTERM, or the database lost with leases still valid): what was
    // not handed to the sink goes back with the settlement. A source whose batches commit
    // or roll back whole lets them finish instead.
    virtual void stop(const std::string& why) = 0;
    // The drain bound passed (stopping, or the database away): what is still unsettled is
    // given back now where the source can (returns how many messages); claims still out are
    // dropped.
    virtual size_t abandon(const std::string& why) = 0;
    // The database connection was lost: whatever rides on it is gone. Returns how many claimed
    // messages the database took back with it.
    virtual size_t database_lost(const std::string& why) = 0;

    virtual void open_batches(std::vector<Batch*>& out) = 0;
    virtual size_t open_count() const = 0;          // open batches and claims out
    virtual bool settlement_due() const = 0;        // something to settle now: do not sleep
    virtual void poll_fds(std::vector<pollfd>& fds) const = 0;   // answers awaited
};

}  // namespace once::relay
