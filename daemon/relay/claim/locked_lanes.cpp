#include "claim/locked_lanes.hpp"

#include "outbox/source_db.hpp"   // DbLost

#include <poll.h>
#include <spdlog/spdlog.h>

#include <utility>

namespace once::relay {

LockedLanes::LockedLanes(size_t lanes, TxFactory make_tx, Millis publish_limit, Metrics& metrics)
    : lane_count_(lanes), make_tx_(std::move(make_tx)), publish_limit_(publish_limit), metrics_(metrics) {}

bool LockedLanes::connect() {
    if (lanes_.empty())
        for (size_t i = 0; i < lane_count_; ++i) lanes_.emplace_back().tx = make_tx_();
    for (Lane& l : lanes_) {
        if (l.tx->connected()) continue;
        if (l.tx->connect()) continue;
        lanes_.clear();   // (each lane's connect looks for once.claim_locked)
        return false;
    }
    return true;
}

bool LockedLanes::may_claim() const {
    bool idle_lane = false, claiming = false;
    for (const Lane& l : lanes_) {
        if (l.batch && !l.batch->all_dispatched()) return false;   // the sink still has work queued
        idle_lane |= l.state == LaneState::idle;
        claiming |= l.state == LaneState::claiming;
    }
    return idle_lane && (!claiming || draining_);
}

void LockedLanes::start_claim(const ClaimRequest& request) {
    for (Lane& l : lanes_) {
        if (l.state != LaneState::idle) continue;
        l.tx->start_claim(request.batch, request.topics);   // DbLost: the relay backs off
        l.state = LaneState::claiming;
        l.claim_wants = request.claim_wants;
        return;
    }
}

std::vector<ClaimAnswer> LockedLanes::collect_claims() {
    std::vector<ClaimAnswer> answers;
    for (size_t i = 0; i < lanes_.size(); ++i) {
        Lane& l = lanes_[i];
        if (l.state != LaneState::claiming || !l.tx->claim_ready()) continue;
        // A refused or lost claim holds nothing: the lane is idle whatever finish_claim throws.
        l.state = LaneState::idle;
        std::vector<Message> msgs = l.tx->finish_claim();
        // With messages, the transaction stays open until open_batch() or rollback().
        if (!msgs.empty()) l.state = LaneState::claiming;
        draining_ = !msgs.empty();
        answers.push_back(ClaimAnswer{i, std::move(msgs), l.claim_wants});
    }
    return answers;
}

void LockedLanes::open_batch(size_t lane, Batch batch) {
    Lane& l = lanes_[lane];
    l.batch.emplace(std::move(batch));
    l.state = LaneState::publishing;
}

bool LockedLanes::give_back_unopened(size_t lane, std::vector<Message>&) {
    Lane& l = lanes_[lane];
    l.tx->rollback();
    l.state = LaneState::idle;
    return true;
}

void LockedLanes::keep_claims(Clock::time_point now) {
    if (stop_overdue(now) > 0)
        spdlog::warn("a locked batch was not handed to the sink within {} of its claim (--lease); the rest of it goes back "
                     "to the outbox", format_duration(publish_limit_));
}

size_t LockedLanes::stop_overdue(Clock::time_point now) {
    size_t stopped = 0;
    for (Lane& l : lanes_) {
        if (l.state != LaneState::publishing || l.batch->all_dispatched() || now < l.batch->claimed_at() + publish_limit_)
            continue;
        l.batch->stop("not handed to the sink within --lease of its claim (locked claim mode)");
        ++stopped;
    }
    return stopped;
}

void LockedLanes::settle_finished(const std::function<void(const SettleOutcome&)>& on_settled) {
    for (Lane& l : lanes_) {
        if (l.state == LaneState::publishing) {
            // Sent without waiting (nothing while the batch is unfinished); the answer is read
            // in a later turn, when poll() says it arrived.
            l.settlement = start_settle_locked(*l.batch, *l.tx);
            if (!l.settlement) continue;
            l.state = LaneState::settling;
        }
        if (l.state != LaneState::settling || !l.tx->settle_ready()) continue;
        LockedSettle r = finish_settle_locked(*l.batch, *l.tx, std::move(*l.settlement));
        count_committed(r);   // (before the batch its settlement points into goes)
        SettleOutcome outcome;
        outcome.batch_size = l.batch->size();
        outcome.given_back = r.result == LockedSettle::Result::given_back;
        outcome.connection_lost = r.connection_lost;
        outcome.error = r.error;
        l.settlement.reset();
        l.batch.reset();
        l.state = LaneState::idle;
        on_settled(outcome);
    }
}

void LockedLanes::count_committed(const LockedSettle& r) {
    if (r.result != LockedSettle::Result::committed) return;
    metrics_.acked += static_cast<uint64_t>(r.report.acked);
    if (r.report.acked < static_cast<int64_t>(r.settlement.acks.size()))
        spdlog::warn("{} of {} acks of a locked batch not counted by once.ack", r.settlement.acks.size() - r.report.acked,
                     r.settlement.acks.size());
    for (size_t i = 0; i < r.settlement.nacks.size(); ++i) {
        const Batch::Entry& e = *r.settlement.nacks[i];
        metrics_.nacked++;
        if (i < r.report.nack_verdicts.size() && r.report.nack_verdicts[i] == "dead") {
            spdlog::warn("dead letter: message {} (topic {}) after {} attempt(s): {}", e.msg.id, e.msg.topic, e.msg.attempt,
                         e.error);
            metrics_.dead++;
        }
    }
    metrics_.dead += r.settlement.deads.size();
}

void LockedLanes::give_back(Lane& l, const std::string& why) {
    l.tx->rollback();   // (a settlement still out: closes the connection)
    l.settlement.reset();
    l.batch->give_back(why);
    l.batch.reset();
    l.state = LaneState::idle;
}

size_t LockedLanes::give_back_all(const std::string& why, bool connection_lost) {
    size_t returned = 0;
    for (Lane& l : lanes_) {
        if (l.batch) {
            returned += l.batch->size();
            if (connection_lost) {   // closing the connection below rolls it back
                l.batch->give_back(why);
                l.batch.reset();
                l.settlement.reset();
            } else {
                give_back(l, why);
            }
        }
        // A claim out (or answered and not opened) rolls back with its connection.
        if (l.state == LaneState::claiming || connection_lost) l.tx->disconnect();
        l.state = LaneState::idle;
    }
    return returned;
}

void LockedLanes::open_batches(std::vector<Batch*>& out) {
    for (Lane& l : lanes_)
        if (l.batch) out.push_back(&*l.batch);
}

size_t LockedLanes::open_count() const {
    size_t n = 0;
    for (const Lane& l : lanes_) n += l.state != LaneState::idle ? 1 : 0;
    return n;
}

bool LockedLanes::settlement_due() const {
    for (const Lane& l : lanes_)
        if (l.state == LaneState::publishing && l.batch->finished()) return true;
    return false;
}

void LockedLanes::poll_fds(std::vector<pollfd>& fds) const {
    for (const Lane& l : lanes_)
        if (l.state == LaneState::claiming || l.state == LaneState::settling) fds.push_back(pollfd{l.tx->socket(), POLLIN, 0});
}

}  // namespace once::relay
