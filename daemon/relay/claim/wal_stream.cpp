#include "claim/wal_stream.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace once::relay {

namespace {

constexpr std::chrono::seconds kWriteBackRetry{1};
constexpr const char* kBehindItsKey = "behind an earlier message of its key in the outbox table";

}  // namespace

WalStream::WalStream(std::unique_ptr<wal::WalReader> reader, std::unique_ptr<WalStore> store, Metrics& metrics,
                     Millis reconnect_max, std::vector<std::string> topics, bool accept_slot_loss_on_failover)
    : store_(std::move(store)), metrics_(metrics),
      session_(std::move(reader), *store_, metrics, reconnect_max, std::move(topics), accept_slot_loss_on_failover),
      fences_(*store_), waiting_write_backs_(*store_, metrics) {}

void WalStream::reset(const std::string& why, Clock::time_point now) {
    size_t claimed = answered_ ? answered_->size() : 0;
    for (const auto& b : batches_) claimed += b.batch.size();
    session_.reset(why, now, claimed);
    answered_.reset();
    batches_.clear();
    fences_.forget_in_flight();
    waiting_write_backs_.clear();   // (unconfirmed: they come again)
}

void WalStream::pump(Clock::time_point now) {
    session_.log_skipped_when_due(now);
    if (stopped_) {
        if (session_.is_open() && open_count() == 0) session_.close();
        if (!session_.is_open()) return;
    }
    std::string failure;
    // Everything below the slot's confirmed position was settled (by this relay before a
    // kill -9, say): its fences are released. The keys still fenced have stream messages ahead
    // that follow them into the table.
    if (!session_.open_when_due(now, [this] { fences_.reload(); }, failure)) {
        if (!failure.empty()) reset(failure, now);
        return;
    }
    // (before confirm: one written back settles its message)
    waiting_write_backs_.retry(now, [this](const WalWaitingWriteBack& w) { written_back(w); });
    try {
        WalStreamSession::Read r = session_.read(now);
        if (r == WalStreamSession::Read::ended) {
            reset("the server ended the stream", now);
            return;
        }
        confirm(now);
        if (r == WalStreamSession::Read::read) session_.publish_lag();
    } catch (const std::exception& e) {
        reset(e.what(), now);
    }
}

void WalStream::confirm(Clock::time_point now) {
    // (fences released as often as status updates: not a database call per pump)
    if (session_.confirm(now, !answered_ && batches_.empty(), fences_.any_left()))
        fences_.release_up_to(session_.confirmed());
}

bool WalStream::may_claim() const {
    const auto& pending = session_.queue();
    if (stopped_ || !session_.is_open() || pending.empty() || answered_ || batches_.size() >= kOpenBatches) return false;
    const WalQueuedMessage& front = pending.front();
    if (front.message.has_key && fences_.in_flight(KeyOwner{front.message.key, front.order.key_owner}))
        return false;   // waits until its key's message in flight settles
    if (Clock::now() < write_back_retry_at_) return false;
    for (const auto& b : batches_)
        if (!b.batch.all_dispatched()) return false;
    return true;
}

bool WalStream::wrote_back_behind_its_key(const WalQueuedMessage& q, bool& failed) {
    KeyOwner k{q.message.key, q.order.key_owner};
    try {
        if (!fences_.table_holds(k)) return false;
        store_->write_back(WalWriteBack{&q.message, 0, kBehindItsKey, false, q.order});
    } catch (const WalWriteBackBusy& e) {
        // Aside until the key's lock is free; its key in flight keeps the key's later messages behind it.
        waiting_write_backs_.wait(WalWaitingWriteBack{q.message, q.commit_lsn, q.order, 0, kBehindItsKey, false, false},
                                  e.what());
        fences_.hold(k);
        return true;
    } catch (const std::exception& e) {
        spdlog::warn("WAL stream: writing back message {} behind its key failed (retrying): {}", q.message.id, e.what());
        write_back_retry_at_ = Clock::now() + kWriteBackRetry;
        failed = true;
        return false;
    }
    metrics_.wal_written_back++;
    session_.settled(q.commit_lsn);
    fences_.written_back_behind_its_key();
    return true;
}

void WalStream::start_claim(const ClaimRequest& request) {
    auto& pending = session_.queue();
    size_t n = static_cast<size_t>(std::max(1, request.batch));
    // Only what other sessions can see already (also before writing anything back).
    size_t visible = 0;
    if (!visible_prefix(std::min(n, pending.size()), visible)) return;
    std::vector<WalQueuedMessage> taken;
    taken.reserve(std::min(n, pending.size()));
    std::set<KeyOwner> taken_keys;
    while (visible > 0 && taken.size() < n && !pending.empty()) {
        WalQueuedMessage& q = pending.front();
        if (q.message.has_key) {
            KeyOwner k{q.message.key, q.order.key_owner};
            // Never two messages of a key in flight: the claim ends before this one.
            if (fences_.in_flight(k) || taken_keys.count(k)) break;
            bool failed = false;
            if (wrote_back_behind_its_key(q, failed)) {
                pending.pop_front();
                --visible;
                continue;
            }
            if (failed) break;
            taken_keys.insert(k);
        }
        taken.push_back(std::move(q));
        pending.pop_front();
        --visible;
    }
    fences_.hold(taken_keys);
    if (taken.empty()) return;   // (all written back, the front waits for its key, or is not visible yet)
    answered_ = std::move(taken);
}

bool WalStream::visible_prefix(size_t limit, size_t& visible) {
    const auto& pending = session_.queue();
    auto count = [&] {
        size_t v = 0;
        while (v < limit && wal::committed_xid_visible(pending[v].xid, *snapshot_)) ++v;
        return v;
    };
    visible = snapshot_ ? count() : 0;
    if (visible == limit) return true;
    try {
        snapshot_ = wal::parse_snapshot(store_->current_snapshot());
    } catch (const std::exception& e) {
        spdlog::warn("WAL stream: reading pg_current_snapshot() failed (retrying): {}", e.what());
        write_back_retry_at_ = Clock::now() + kWriteBackRetry;
        return false;
    }
    visible = count();
    return true;
}

std::vector<ClaimAnswer> WalStream::collect_claims() {
    std::vector<ClaimAnswer> out;
    if (!answered_) return out;
    // The messages move to the answer (a copy of each was a tenth of the relay's allocations);
    // what open_batch needs of the claim, positions and key orders, stays here.
    ClaimAnswer a{0, {}, 0};
    a.messages.reserve(answered_->size());
    for (WalQueuedMessage& q : *answered_) a.messages.push_back(std::move(q.message));
    out.push_back(std::move(a));
    return out;
}

bool WalStream::give_back_unopened(size_t, std::vector<Message>& messages) {
    if (!answered_) return true;
    if (messages.size() == answered_->size())   // (moved out by collect_claims: they come back)
        for (size_t i = 0; i < messages.size(); ++i) (*answered_)[i].message = std::move(messages[i]);
    auto& pending = session_.queue();
    for (auto it = answered_->rbegin(); it != answered_->rend(); ++it) {
        if (it->message.has_key) fences_.let_go(KeyOwner{it->message.key, it->order.key_owner});
        pending.push_front(std::move(*it));
    }
    answered_.reset();
    return true;
}

void WalStream::open_batch(size_t, Batch batch) {
    OpenBatch b{std::move(batch), {}, {}, {}};
    if (answered_) {
        for (const WalQueuedMessage& q : *answered_) {
            b.commit_lsns.push_back(q.commit_lsn);
            b.orders.push_back(q.order);
        }
        answered_.reset();
    }
    b.settled.assign(b.commit_lsns.size(), false);
    if (stopped_) b.batch.stop("relay stopping");
    batches_.push_back(std::move(b));
}

bool WalStream::settle_batch(OpenBatch& b, std::vector<WalQueuedMessage>& requeue) {
    for (size_t i = 0; i < b.batch.size(); ++i) {
        if (b.settled[i]) continue;
        const Batch::Entry& e = b.batch.entry(i);
        switch (e.state) {
        case Batch::State::delivered:
            metrics_.acked++;
            break;
        case Batch::State::retry:
        case Batch::State::dead:
        case Batch::State::held_back: {
            bool dead = e.state == Batch::State::dead;
            const int attempts = e.state == Batch::State::held_back ? 0 : 1;
            const std::optional<Millis> retry_after = e.state == Batch::State::retry ? e.retry_after : std::nullopt;
            try {
                store_->write_back(WalWriteBack{&e.msg, attempts, e.error, dead, b.orders[i], retry_after});
            } catch (const WalWriteBackBusy& ex) {
                // Aside, so the batch (and the stream) goes on; its key stays in flight and the
                // tracker has it unsettled until it is written back.
                waiting_write_backs_.wait(WalWaitingWriteBack{e.msg, b.commit_lsns[i], b.orders[i], attempts, e.error,
                                                              dead, true, retry_after},
                                          ex.what());
                b.settled[i] = true;
                continue;
            } catch (const std::exception& ex) {
                spdlog::warn("WAL stream: writing back message {} to the outbox table failed (retrying): {}", e.msg.id,
                             ex.what());
                return false;
            }
            metrics_.wal_written_back++;
            (dead ? metrics_.dead : metrics_.nacked)++;
            if (e.msg.has_key)   // fenced in the table: the key's later stream messages follow it
                fences_.written_back(KeyOwner{e.msg.key, b.orders[i].key_owner});
            break;
        }
        case Batch::State::returned:
            // Never handed to the sink: published again from the queue (or, stopping, after a restart).
            if (e.msg.has_key) fences_.let_go(KeyOwner{e.msg.key, b.orders[i].key_owner});
            requeue.push_back(WalQueuedMessage{e.msg, b.commit_lsns[i], b.orders[i]});
            b.settled[i] = true;
            continue;
        case Batch::State::waiting:
        case Batch::State::in_flight:
            return false;   // (not finished: not called)
        }
        b.settled[i] = true;
        session_.settled(b.commit_lsns[i]);
        if (e.msg.has_key) fences_.let_go(KeyOwner{e.msg.key, b.orders[i].key_owner});
    }
    return true;
}

void WalStream::written_back(const WalWaitingWriteBack& w) {
    metrics_.wal_written_back++;
    if (w.from_batch) (w.dead ? metrics_.dead : metrics_.nacked)++;
    session_.settled(w.commit_lsn);
    if (w.message.has_key) {   // fenced in the table: the key's later stream messages follow it
        KeyOwner k{w.message.key, w.order.key_owner};
        fences_.let_go(k);
        fences_.written_back(k);
    }
}

void WalStream::settle_finished(const std::function<void(const SettleOutcome&)>& on_settled) {
    auto now = Clock::now();
    std::vector<WalQueuedMessage> requeue;
    while (!batches_.empty() && batches_.front().batch.finished()) {   // in order: requeued messages keep theirs
        if (now < write_back_retry_at_) break;
        if (!settle_batch(batches_.front(), requeue)) {
            write_back_retry_at_ = now + kWriteBackRetry;
            break;
        }
        size_t size = batches_.front().batch.size();
        batches_.pop_front();
        on_settled(SettleOutcome{size, false, false, {}});
    }
    auto& pending = session_.queue();
    for (auto it = requeue.rbegin(); it != requeue.rend(); ++it) pending.push_front(std::move(*it));
    confirm(now);
    session_.publish_lag();
}

void WalStream::stop(const std::string& why) {
    for (auto& b : batches_) b.batch.stop(why);
}

size_t WalStream::abandon(const std::string& why) {
    if (stopped_ && (!batches_.empty() || answered_)) reset(why, Clock::now());
    return 0;
}

void WalStream::open_batches(std::vector<Batch*>& out) {
    for (auto& b : batches_) out.push_back(&b.batch);
}

bool WalStream::settlement_due() const {
    if (answered_) return true;
    if (waiting_write_backs_.due(Clock::now())) return true;
    return !batches_.empty() && batches_.front().batch.finished() && Clock::now() >= write_back_retry_at_;
}

}  // namespace once::relay
