// The WAL transport's claim source (--transport wal): the pg_once messages of a logical
// replication slot, published through the sink like a claimed batch, and settled by the
// slot's position instead of by acks in the table. A "claim" takes up to the batch size of the
// decoded messages that have arrived, in WAL order, whose transactions other sessions can see
// already (wal/commit_visibility.hpp).
//
// The rules it implements: docs/design.md, "What the relay does with the stream",
// "Confirmation rule", "Write-back on refusal", "Per-key order between the stream and the
// table", "Several relays" and "Wire format".
//
// Its parts: the replication session (claim/wal_stream_session.hpp), the per-key rules
// (claim/wal_key_fences.hpp) and the write-backs waiting for a key's lock
// (claim/wal_write_back_queue.hpp); the database side is a WalStore (claim/wal_store.hpp).
//
// Blocking: start_claim and settle_finished query the relay's ordinary database connection
// synchronously on the event loop: pg_current_snapshot() when a queued message is not yet
// known to be visible (visible_prefix; the snapshot read is kept, so once per claim at most
// while the stream runs ahead of commits), once.wal_key_in_table and once.wal_write_back for
// a message behind a written-back key, and once.wal_write_back for each message the sink
// refused. That is acceptable because each is one short statement, the write-back's wait for a
// key's lock bounded by the store's lock timeout (wal/pg_wal_store.hpp); a failure backs off
// for a second; and the stream only waits meanwhile (nothing is confirmed before it is
// settled).
#pragma once

#include "batch.hpp"
#include "claim/claim_source.hpp"
#include "claim/wal_key_fences.hpp"
#include "claim/wal_relay_message.hpp"
#include "claim/wal_store.hpp"
#include "claim/wal_stream_session.hpp"
#include "claim/wal_write_back_queue.hpp"
#include "duration.hpp"
#include "message.hpp"
#include "metrics.hpp"
#include "wal/commit_visibility.hpp"
#include "wal/slot_health.hpp"
#include "wal/wal_reader.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

struct pollfd;

namespace once::relay {

class WalStream final : public ClaimSource {
public:
    static constexpr size_t kOpenBatches = 2;
    static constexpr size_t kMaxQueued = WalStreamSession::kMaxQueued;
    static constexpr Millis kStandbyRetry = WalStreamSession::kStandbyRetry;
    static constexpr std::chrono::seconds kSlotRecheck = WalStreamSession::kSlotRecheck;

    WalStream(std::unique_ptr<wal::WalReader> reader, std::unique_ptr<WalStore> store, Metrics& metrics,
              Millis reconnect_max, std::vector<std::string> topics = {}, bool accept_slot_loss_on_failover = false);
    // Topic patterns of the messages to publish (empty: all); a reload changes them.
    void set_topics(std::vector<std::string> topics) { session_.set_topics(std::move(topics)); }
    ClaimMode mode() const override { return ClaimMode::wal; }

    // Opens the stream when due, reads what has arrived, confirms what may be. Never throws:
    // a failure is logged and the stream reopens with backoff.
    void pump(Clock::time_point now) override;
    // Closes the stream (after a last status update with the confirmed position).
    void close() { session_.close(); }
    // The relay is stopping: nothing more is claimed, the stream closes once the open batches
    // are settled, and only now does the drain bound (abandon) drop what is unsettled.
    void shutdown() { stopped_ = true; }

    bool is_open() const { return session_.is_open(); }
    bool standing_by() const { return session_.standing_by(); }   // another connection streams the slot
    size_t queued() const { return session_.queue().size(); }     // decoded, not in a batch yet
    wal::Lsn confirmed() const { return session_.confirmed(); }
    // The last verdict on the slot (usable until one was read).
    wal::SlotVerdict slot_verdict() const { return session_.slot_verdict(); }

    bool may_claim() const override;
    // Takes up to request.batch queued messages as the next answer (blocking: see above).
    void start_claim(const ClaimRequest& request) override;
    std::vector<ClaimAnswer> collect_claims() override;
    bool give_back_unopened(size_t lane, std::vector<Message>& messages) override;   // back to the front of the queue
    void open_batch(size_t lane, Batch batch) override;
    void keep_claims(Clock::time_point) override {}
    // Settles every finished batch (acks, write-backs: blocking, see above) and confirms;
    // `on_settled` per batch. A write-back that fails leaves the batch for a later pass (after
    // a second).
    void settle_finished(const std::function<void(const SettleOutcome&)>& on_settled) override;
    void stop(const std::string& why) override;
    // Stopping (shutdown), the drain bound passed: resets the stream; returns 0. Otherwise
    // (the database is away) nothing: the stream has its own connection.
    size_t abandon(const std::string& why) override;
    size_t database_lost(const std::string&) override { return 0; }   // the stream has its own connection

    void open_batches(std::vector<Batch*>& out) override;
    size_t open_count() const override { return batches_.size() + (answered_ ? 1 : 0); }
    bool settlement_due() const override;
    void poll_fds(std::vector<pollfd>& fds) const override { session_.poll_fds(fds); }

private:
    using KeyOwner = WalKeyFences::KeyOwner;
    struct OpenBatch {
        Batch batch;
        std::vector<wal::Lsn> commit_lsns;   // per entry
        std::vector<WalKeyOrder> orders;     // per entry
        std::vector<bool> settled;           // per entry
    };
    // A keyed message at the queue's front whose key has a message in the table: written back
    // behind it and settled. false: it is to be published (or the database could not be asked:
    // `failed`).
    bool wrote_back_behind_its_key(const WalQueuedMessage& q, bool& failed);
    // How many of the first `limit` queued messages, in order, other sessions can see already;
    // false: the database could not be asked.
    bool visible_prefix(size_t limit, size_t& visible);
    void confirm(Clock::time_point now);
    void reset(const std::string& why, Clock::time_point now);
    bool settle_batch(OpenBatch& b, std::vector<WalQueuedMessage>& requeue);   // false: a write-back failed
    void written_back(const WalWaitingWriteBack& w);   // settled, its key remembered and fenced

    std::unique_ptr<WalStore> store_;
    Metrics& metrics_;
    WalStreamSession session_;
    WalKeyFences fences_;
    WalWriteBackQueue waiting_write_backs_;
    std::optional<std::vector<WalQueuedMessage>> answered_;   // the claim taken, until open_batch
    std::deque<OpenBatch> batches_;
    bool stopped_ = false;
    Clock::time_point write_back_retry_at_{};
    std::optional<wal::SnapshotXids> snapshot_;  // the last one read: what was visible to it stays visible
};

}  // namespace once::relay
