// The WAL transport's write-backs that wait aside (docs/design.md, "Write-back on refusal"):
// a message the sink refused, or one behind its key, whose write-back found the key's lock
// held (WalWriteBackBusy, a prepared transaction's, say). It waits here, retried every second
// in order, while the stream goes on; its key stays in flight and the slot is confirmed only
// up to before it until it is written back.
//
// Blocking: retry calls once.wal_write_back on the relay's ordinary database connection,
// synchronously on the event loop, once per waiting message. That is acceptable because the
// store waits for a key's lock no longer than its lock timeout (wal/pg_wal_store.hpp), retries
// come at most once a second, and a failure ends the pass; the stream only waits meanwhile.
#pragma once

#include "claim/wal_store.hpp"
#include "duration.hpp"
#include "message.hpp"
#include "metrics.hpp"
#include "wal/lsn.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>

namespace once::relay {

// A write-back whose key's lock is held, retried aside.
struct WalWaitingWriteBack {
    Message message;
    wal::Lsn commit_lsn;
    WalKeyOrder order;
    int attempts;
    std::string error;
    bool dead;
    bool from_batch;   // the sink's refusal (counted as nacked or dead), not behind its key
    std::optional<Millis> retry_after{};   // the sink's Retry-After
};

class WalWriteBackQueue {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::seconds kRetryEvery{1};

    WalWriteBackQueue(WalStore& store, Metrics& metrics) : store_(store), metrics_(metrics) {}

    // Sets `w` aside (`why`: the store's reason; logged once per episode).
    void wait(WalWaitingWriteBack w, const std::string& why);
    // When due, writes back the waiting ones in order, each (blocking) with the store; each
    // written is passed to `written` and leaves the queue. Each waits for a different key
    // (one message of a key in flight), so a busy one does not hold the others; any other
    // failure ends the pass.
    void retry(Clock::time_point now, const std::function<void(const WalWaitingWriteBack&)>& written);
    bool due(Clock::time_point now) const { return !waiting_.empty() && now >= retry_at_; }
    // The stream resets: they are unconfirmed, so they come again from the slot.
    void clear();

private:
    WalStore& store_;
    Metrics& metrics_;
    std::deque<WalWaitingWriteBack> waiting_;   // their keys' lock held; keys in flight
    Clock::time_point retry_at_{};
    bool logged_ = false;                       // said once per episode
};

}  // namespace once::relay
