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
}

void LeasedClaims::drop_claim() {
    if (claiming_) disconnect();
}

bool LeasedClaims::may_claim() const {
    if (claiming_) return false;
    for (const Batch& b : batches_)
        if (!b.all_dispatched()) return false;   // the sink still has work queued: claim behind it later
    return true;
}

std::optional<std::vector<Message>> LeasedClaims::start_claim(int batch, Millis lease, const std::vector<std::string>& topics,
                                                               uint64_t claim_wants) {
    claim_wants_ = claim_wants;
    if (claim_connection_ && claim_connection_->connected()) {   // answered in collect_claim
        claim_connection_->start_leased_claim(batch, lease, topics);
        claiming_ = true;
        return std::nullopt;
    }
    // (the locked mode leasing for a while after a failed settlement: on the LISTEN connection)
    return store_.claim(batch, lease, topics);
}

std::optional<std::vector<Message>> LeasedClaims::collect_claim() {
    if (!claiming_ || !claim_connection_->claim_ready()) return std::nullopt;
    claiming_ = false;
    return claim_connection_->finish_claim();
}

void LeasedClaims::open_batch(Batch batch) { batches_.push_back(std::move(batch)); }

void LeasedClaims::settle_finished(const std::function<void()>& on_batch_settled) {
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
        it = batches_.erase(it);
        on_batch_settled();
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

size_t LeasedClaims::open_count() const { return batches_.size() + (claiming_ ? 1 : 0); }

bool LeasedClaims::settlement_due() const {
    for (const Batch& b : batches_)
        if (b.finished()) return true;
    return false;
}

void LeasedClaims::poll_fds(std::vector<pollfd>& fds) const {
    if (claiming_) fds.push_back(pollfd{claim_connection_->socket(), POLLIN, 0});
}

}  // namespace once::relay
