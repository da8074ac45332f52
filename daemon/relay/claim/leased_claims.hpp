// The leased claim mode (--claim-mode leased) as its own type: once.claim takes a lease on a
// batch, sent without waiting on a connection used for claims only; the batch is settled later
// in separate statements on the LISTEN connection (LeaseStore: once.ack for every finished
// batch at once, once.nack / once.dead per message), and its lease is extended while a slow
// sink works. A relay that dies leaves its messages to come back when the lease ends.
//
// Without a claim connection (the locked mode, leasing for a while after a failed settlement)
// claims are made on the LISTEN connection and answered at once.
//
// Up to two batches are open; a claim is out only while no batch has messages still waiting
// for the sink. What the sink confirmed before the database went away is acked after the
// reconnect (pending acks). Unit-tested against a fake LeaseStore and a fake sink.
#pragma once

#include "batch.hpp"
#include "claim/claim_source.hpp"
#include "claim/lease_store.hpp"
#include "duration.hpp"
#include "outbox/locked_tx.hpp"
#include "metrics.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct pollfd;

namespace once::relay {

class LeasedClaims final : public ClaimSource {
public:
    // `claim_connection`: may be null (claims then go to `store` and are answered at once).
    LeasedClaims(LeaseStore& store, Metrics& metrics, std::unique_ptr<PgLockedTx> claim_connection);
    ClaimMode mode() const override { return ClaimMode::leased; }

    // (Re)connects the claim connection, if there is one. Throws DbLost.
    void connect();
    // Claims from now on go out on `claim_connection` (the leased mode, also after the locked
    // mode found no once.claim_locked), unless one is there already.
    void use_claim_connection(std::unique_ptr<PgLockedTx> claim_connection);
    bool has_claim_connection() const { return claim_connection_ != nullptr; }
    // The database went away: the claim connection closes with the rest.
    void disconnect();
    // The drain bound passed: a claim still out is dropped (if it committed, its leases run
    // out and the messages come back).
    void drop_claim();

    // No claim out, and every open batch wholly handed to the sink.
    bool may_claim() const override;
    // Sends a claim. Made on the LISTEN connection (no claim connection), it is answered at
    // once, and collect_claims() returns the answer. Throws DbLost, or std::runtime_error when
    // the server refused.
    void start_claim(const ClaimRequest& request) override;
    // The answer of the claim out, once it has arrived (lane 0). Throws like start_claim.
    std::vector<ClaimAnswer> collect_claims() override;
    // A leased claim cannot be handed back untouched: the relay opens it stopped, and its
    // settlement nacks it (false).
    bool give_back_unopened(size_t, std::vector<Message>&) override { return false; }
    void open_batch(size_t lane, Batch batch) override;
    // Extends the leases due (with the lease of the last claim).
    void keep_claims(Clock::time_point now) override;

    // Settles every finished batch: each one's nacks and dead letters, then one once.ack for
    // all of them; `on_settled` after each batch. Throws DbLost: the acks gathered so far are
    // kept and made after the reconnect. With the database away, the acks of finished batches
    // are kept for after the reconnect instead (retire_finished_offline).
    void settle_finished(const std::function<void(const SettleOutcome&)>& on_settled) override;
    // The database is away: the acks of finished batches are kept for after the reconnect;
    // the rest comes back when its lease runs out.
    void retire_finished_offline();
    void flush_pending_acks();   // after a reconnect; throws DbLost
    // Extends the lease of every batch due (half the lease since its claim or last extension).
    void extend_leases(Clock::time_point now, Millis lease);
    // Publish nothing more (SIGTERM, database lost); what was not published goes back.
    void stop(const std::string& why) override;
    // A claim still out is dropped; open batches wait for their leases (0 given back).
    size_t abandon(const std::string&) override { drop_claim(); return 0; }
    // The claim connection closes (a claim out: its leases run out); the open batches finish
    // publishing what is in flight, their acks kept for after the reconnect (0 given back).
    size_t database_lost(const std::string&) override { disconnect(); return 0; }

    void open_batches(std::vector<Batch*>& out) override;
    size_t open_count() const override;   // open batches, and a claim out (or answered)
    bool settlement_due() const override; // a finished batch or an answer waits: do not sleep
    void poll_fds(std::vector<pollfd>& fds) const override;

private:
    void give_back(const Batch::Entry& e, bool dead);   // once.nack, or once.dead when dead

    LeaseStore& store_;
    Metrics& metrics_;
    std::unique_ptr<PgLockedTx> claim_connection_;
    bool claiming_ = false;                 // a claim is out on claim_connection_
    uint64_t claim_wants_ = 0;
    Millis lease_{0};                       // of the last claim: what extensions renew
    std::optional<std::vector<Message>> answered_;   // a claim made on the LISTEN connection
    std::deque<Batch> batches_;             // open batches, oldest first
    std::vector<std::string> pending_acks_; // delivered before the database went away
};

}  // namespace once::relay
