#include "claim/wal_write_back_queue.hpp"

#include <spdlog/spdlog.h>

namespace once::relay {

void WalWriteBackQueue::wait(WalWaitingWriteBack w, const std::string& why) {
    if (!logged_)
        spdlog::warn("WAL stream: writing back message {} waits for its key's lock ({}); retried every second while "
                     "the stream goes on, confirmed up to before it (once_wal_write_backs_waiting)",
                     w.message.id, why);
    logged_ = true;
    if (waiting_.empty()) retry_at_ = Clock::now() + kRetryEvery;
    waiting_.push_back(std::move(w));
    metrics_.wal_write_backs_waiting = static_cast<int64_t>(waiting_.size());
}

void WalWriteBackQueue::retry(Clock::time_point now,
                              const std::function<void(const WalWaitingWriteBack&)>& written) {
    if (waiting_.empty() || now < retry_at_) return;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
        try {
            store_.write_back(WalWriteBack{&it->message, it->attempts, it->error, it->dead, it->order, it->retry_after});
        } catch (const WalWriteBackBusy&) {
            ++it;
            continue;
        } catch (const std::exception& e) {
            spdlog::warn("WAL stream: writing back message {} to the outbox table failed (retrying): {}",
                         it->message.id, e.what());
            break;
        }
        written(*it);
        it = waiting_.erase(it);
    }
    metrics_.wal_write_backs_waiting = static_cast<int64_t>(waiting_.size());
    if (!waiting_.empty()) {
        retry_at_ = now + kRetryEvery;
    } else if (logged_) {
        spdlog::info("WAL stream: the write-backs that waited for their key's lock are written back");
        logged_ = false;
    }
}

void WalWriteBackQueue::clear() {
    waiting_.clear();
    metrics_.wal_write_backs_waiting = 0;
    logged_ = false;
}

}  // namespace once::relay
