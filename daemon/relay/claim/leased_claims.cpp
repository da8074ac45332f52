#include "claim/leased_claims.hpp"

#include "outbox/source_db.hpp"   // DbLost

#include <poll.h>
#include <spdlog/spdlog.h>

#include <utility>

namespace once::relay {

LeasedClaims::LeasedClaims(LeaseStore& store, Metrics& metrics, std::unique_ptr<PgLockedTx> claim_connection)
    : store_(store), metrics_(metrics), claim_connection_(std::move(claim_connection)) {}

void LeasedClaims::connect() {
    if (claim_connection_) claim_connection_->connect_for_leased_claims();
}

void LeasedClaims::use_claim_connection(std::unique_ptr<PgLockedTx> claim_connection) {
    if (!claim_connection_) claim_connection_ = std::move(claim_connection);
}

void LeasedClaims::disconnect() {
    if (claim_connection_) claim_connection_->disconnect();
    claiming_ = false;
    answered_.reset();   // (its leases run out)
}

void LeasedClaims::drop_claim() {
    if (claiming_) disconnect();
}

bool LeasedClaims::may_claim() const {
    if (claiming_ || answered_) return false;
    for (const Batch& b : batches_)
        if (!b.all_dispatched()) return false;   // the sink still has work queued: claim behind it later
    return true;
}

void LeasedClaims::start_claim(const ClaimRequest& request) {
    claim_wants_ = request.claim_wants;
    lease_ = request.lease;
    if (claim_connection_ && claim_connection_->connected()) {   // answered in collect_claims
        claim_connection_->start_leased_claim(request.batch, request.lease, request.topics);
        claiming_ = true;
        return;
    }
    // (the locked mode leasing for a while after a failed settlement: on the LISTEN connection)
    answered_ = store_.claim(request.batch, request.lease, request.topics);
}

std::vector<ClaimAnswer> LeasedClaims::collect_claims() {
    std::vector<ClaimAnswer> out;
    if (answered_) {
        out.push_back(ClaimAnswer{0, std::move(*answered_), claim_wants_});
        answered_.reset();
    } else if (claiming_ && claim_connection_->claim_ready()) {
        claiming_ = false;
        out.push_back(ClaimAnswer{0, claim_connection_->finish_claim(), claim_wants_});
    }
    return out;
}

void LeasedClaims::open_batch(size_t, Batch batch) { batches_.push_back(std::move(batch)); }

void LeasedClaims::keep_claims(Clock::time_point now) { extend_leases(now, lease_); }

void LeasedClaims::settle_finished(const std::function<void(const SettleOutcome&)>& on_settled) {
    if (!store_.connected()) {
        retire_finished_offline();
        return;
    }
    flush_pending_acks();
    std::vector<std::string> acks;
    for (auto it = batches_.begin(); it != batches_.end();) {
        std::optional<Batch::Settlement> taken = it->take_settlement();
        if (!taken) { ++it; continue; }
        Batch::Settlement& s = *taken;
        acks.insert(acks.end(), s.acks.begin(), s.acks.end());
        // If the database goes away during the nacks, the acks gathered so far are made
        // after the reconnect; the nacks not made yet come back with their lease.
        try {
            for (const Batch::Entry* e : s.nacks) give_back(*e, false);
            for (const Batch::Entry* e : s.deads) give_back(*e, true);
        } catch (const DbLost&) {
            pending_acks_.insert(pending_acks_.end(), acks.begin(), acks.end());
            batches_.erase(it);
            throw;
        }
        SettleOutcome outcome;
        outcome.batch_size = it->size();
        it = batches_.erase(it);
        on_settled(outcome);
    }
    if (acks.empty()) return;
    int64_t acked;
    try {
        acked = store_.ack(acks);
    } catch (const DbLost&) {
        pending_acks_.insert(pending_acks_.end(), acks.begin(), acks.end());
        throw;
    }
    metrics_.acked += static_cast<uint64_t>(acked);
    if (acked < static_cast<int64_t>(acks.size()))
        spdlog::warn("{} of {} acks refused: their lease expired and another claim took them (raise --lease?)",
                     acks.size() - acked, acks.size());
}

void LeasedClaims::give_back(const Batch::Entry& e, bool dead) {
    // A refusal on a healthy connection (e.g. the lease was taken over and the message
    // acknowledged elsewhere) is logged, not fatal: the lease decides what happens next.
    try {
        if (dead) {
            store_.dead(e.msg.id, e.error);
            metrics_.dead++;
            return;
        }
        std::string verdict = store_.nack(e.msg.id, e.error, e.retry_after);
        metrics_.nacked++;
        if (verdict == "dead") {
            spdlog::warn("dead letter: message {} (topic {}) after {} attempt(s): {}", e.msg.id, e.msg.topic, e.msg.attempt,
                         e.error);
            metrics_.dead++;
        } else if (verdict == "stale") {
            spdlog::warn("nack of message {} ignored: its lease was taken over (raise --lease?)", e.msg.id);
        }
    } catch (const DbLost&) {
        throw;
    } catch (const std::exception& ex) {
        spdlog::warn("{} of message {} failed: {}", dead ? "dead-lettering" : "nack", e.msg.id, ex.what());
    }
}

void LeasedClaims::retire_finished_offline() {
    for (auto it = batches_.begin(); it != batches_.end();) {
        if (!it->finished()) { ++it; continue; }
        auto s = it->settlement();
        pending_acks_.insert(pending_acks_.end(), s.acks.begin(), s.acks.end());
        it = batches_.erase(it);
    }
}

void LeasedClaims::flush_pending_acks() {
    if (pending_acks_.empty()) return;
    int64_t n = store_.ack(pending_acks_);
    metrics_.acked += static_cast<uint64_t>(n);
    if (n < static_cast<int64_t>(pending_acks_.size()))
        spdlog::warn("{} of {} messages delivered before the reconnect had been taken over by another claim; "
                     "they will be delivered again (the sink's dedupe drops them)",
                     pending_acks_.size() - n, pending_acks_.size());
    pending_acks_.clear();
}

void LeasedClaims::extend_leases(Clock::time_point now, Millis lease) {
    if (!store_.connected()) return;
    for (Batch& b : batches_) {
        if (!b.lease_due(now, lease)) continue;
        auto ids = b.open_ids();
        try {
            store_.extend(ids, lease);
            spdlog::debug("extended the lease of {} message(s) (sink is slow)", ids.size());
        } catch (const DbLost&) {
            throw;
        } catch (const std::exception& e) {
            // On a healthy connection (e.g. a message was taken over elsewhere): the lease
            // decides what happens next.
            spdlog::warn("extending leases failed: {}", e.what());
        }
        b.lease_extended(now);
    }
}

void LeasedClaims::stop(const std::string& why) {
    for (Batch& b : batches_) b.stop(why);
}

void LeasedClaims::open_batches(std::vector<Batch*>& out) {
    for (Batch& b : batches_) out.push_back(&b);
}

size_t LeasedClaims::open_count() const { return batches_.size() + (claiming_ || answered_ ? 1 : 0); }

bool LeasedClaims::settlement_due() const {
    if (answered_) return true;
    for (const Batch& b : batches_)
        if (b.finished()) return true;
    return false;
}

void LeasedClaims::poll_fds(std::vector<pollfd>& fds) const {
    if (claiming_) fds.push_back(pollfd{claim_connection_->socket(), POLLIN, 0});
}

}  // namespace once::relay
