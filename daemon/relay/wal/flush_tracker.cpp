#include "wal/flush_tracker.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace once::relay::wal {

// The calls come from the relay's own bookkeeping, so a call out of order is a bug of the
// caller: it throws std::logic_error instead of confirming something it should not.

void FlushTracker::message_received(Lsn commit_lsn, int64_t commit_time) {
    if (!transactions_.empty() && transactions_.back().commit_lsn == commit_lsn && !transactions_.back().ended) {
        ++transactions_.back().outstanding;
    } else {
        if (!transactions_.empty() && commit_lsn <= transactions_.back().commit_lsn)
            throw std::logic_error("FlushTracker: a message of transaction " + format_lsn(commit_lsn) +
                                   " after transaction " + format_lsn(transactions_.back().commit_lsn));
        if (commit_lsn < flush_)
            throw std::logic_error("FlushTracker: a message of transaction " + format_lsn(commit_lsn) +
                                   " below the confirmed position " + format_lsn(flush_));
        transactions_.push_back(Transaction{commit_lsn, 0, 1, false, commit_time});
    }
    ++unsettled_;
}

void FlushTracker::transaction_ended(Lsn commit_lsn, Lsn end_lsn, int64_t commit_time) {
    if (transactions_.empty() || transactions_.back().commit_lsn != commit_lsn) {
        // A transaction without pg_once messages: nothing of it to wait for.
        if (!transactions_.empty() && commit_lsn <= transactions_.back().commit_lsn)
            throw std::logic_error("FlushTracker: transaction " + format_lsn(commit_lsn) + " ended after transaction " +
                                   format_lsn(transactions_.back().commit_lsn));
        transactions_.push_back(Transaction{commit_lsn, end_lsn, 0, true, commit_time});
    } else {
        Transaction& t = transactions_.back();
        if (t.ended) throw std::logic_error("FlushTracker: transaction " + format_lsn(commit_lsn) + " ended twice");
        t.ended = true;
        t.end_lsn = end_lsn;
    }
    advance();
}

FlushTracker::Transaction& FlushTracker::find(Lsn commit_lsn, const char* what) {
    auto it = std::lower_bound(transactions_.begin(), transactions_.end(), commit_lsn,
                               [](const Transaction& t, Lsn lsn) { return t.commit_lsn < lsn; });
    if (it == transactions_.end() || it->commit_lsn != commit_lsn)
        throw std::logic_error(std::string("FlushTracker: ") + what + " of unknown transaction " + format_lsn(commit_lsn));
    return *it;
}

void FlushTracker::message_settled(Lsn commit_lsn) {
    Transaction& t = find(commit_lsn, "a settled message");
    if (t.outstanding == 0)
        throw std::logic_error("FlushTracker: more messages settled than received in transaction " + format_lsn(commit_lsn));
    --t.outstanding;
    --unsettled_;
    advance();
}

void FlushTracker::idle(Lsn keepalive_end) {
    if (transactions_.empty() && keepalive_end > flush_) flush_ = keepalive_end;
}

std::optional<int64_t> FlushTracker::oldest_pending_commit_time() const {
    if (transactions_.empty()) return std::nullopt;
    return transactions_.front().commit_time;
}

void FlushTracker::advance() {
    while (!transactions_.empty() && transactions_.front().ended && transactions_.front().outstanding == 0) {
        flush_ = std::max(flush_, transactions_.front().end_lsn);
        transactions_.pop_front();
    }
}

}  // namespace once::relay::wal
