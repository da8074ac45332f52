// The WAL transport's source (--transport wal): the pg_once messages of a logical replication
// slot (wal::WalReader), published through the sink like a claimed batch, and settled by the
// slot's position instead of by acks in the table. A "claim" takes up to the batch size of the
// decoded messages that have arrived, in WAL order, whose transactions other sessions can see
// already (wal/commit_visibility.hpp). It can query the database, synchronously on the event
// loop: pg_current_snapshot() when a message is not yet known to be visible (visible_prefix),
// and once.wal_key_in_table / once.wal_write_back for a key written back.
//
// The rules it implements (docs/design.md, "WAL transport"): an acknowledged message is
// settled, a refused one is written back to the outbox table and settled once that committed;
// the slot is confirmed only as far as wal::FlushTracker allows ("Confirmation rule", "Write-back
// on refusal"); never two messages of one (key, key_owner) in flight, and behind a written-back
// message of a key its later stream messages are written back too, fenced per slot ("Per-key
// order between the stream and the table"); one streaming relay per slot, the others of its
// group stand by, and --topics passes other topics' messages over as settled ("Several
// relays"); a message of a newer format version stops the reading before it ("Wire format").
#pragma once

#include "batch.hpp"
#include "claim/claim_source.hpp"
#include "duration.hpp"
#include "message.hpp"
#include "metrics.hpp"
#include "rate_limited_log.hpp"
#include "wal/commit_visibility.hpp"
#include "wal/flush_tracker.hpp"
#include "wal/slot_health.hpp"
#include "wal/wal_reader.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

struct pollfd;

namespace once::relay {

// A keyed stream message's order: the role whose order the key is, and its key_seq (uuid
// text; the message's format version 2).
struct WalKeyOrder {
    uint32_t key_owner = 0;
    std::string key_seq;
};

// WalStore::write_back could not take the key's lock bucket (held by a prepared transaction,
// or longer than the store waits): nothing was written, the connection is fine; try again later.
struct WalWriteBackBusy : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One message written back to the outbox table (once.wal_write_back's arguments).
struct WalWriteBack {
    const Message* message;
    int attempts;          // delivery attempts made (1: the one that failed; 0: none, behind its key)
    std::string error;     // why the sink refused it
    bool dead;             // refused for good: a dead letter at once
    WalKeyOrder order{};   // with a keyed message
    std::optional<Millis> retry_after{};   // the sink asked to wait this long (Retry-After)
};

// The relay's ordinary database side of the WAL transport.
class WalStore {
public:
    virtual ~WalStore() = default;
    // The key of the messages' tags (SELECT once.wal_secret()), or nullopt when the database
    // has no such function (the extension emits no tags). Throws when the database cannot be
    // asked.
    virtual std::optional<std::string> message_key() = 0;
    // SELECT once.wal_write_back(...), committed when it returns; a keyed one is fenced for
    // this relay's slot. Throws WalWriteBackBusy when the key's lock is held, else on failure.
    virtual void write_back(const WalWriteBack& w) = 0;
    // The slot and the server as PostgreSQL reports them (wal/slot_health.hpp). Throws when
    // the database cannot be asked.
    virtual wal::SlotReading read_slot() = 0;
    // Whether the outbox table holds a message of (key, owner) (once.wal_key_in_table).
    virtual bool key_in_table(const std::string& key, uint32_t owner) = 0;
    // once.wal_release_fences of this relay's slot up to `confirmed`, or (nullopt) up to the
    // slot's confirmed_flush_lsn as the server has it; returns how many of the slot's rows stay
    // fenced. Throws on failure.
    virtual int release_fences(std::optional<wal::Lsn> confirmed) = 0;
    // The (key, owner) of the rows this relay's slot still fences (once.wal_fenced_keys).
    virtual std::vector<std::pair<std::string, uint32_t>> fenced_keys() = 0;
    // pg_current_snapshot() as text (wal/commit_visibility.hpp). Throws on failure.
    virtual std::string current_snapshot() = 0;
};

// WalMessage -> the relay's Message (uuid text, created_at as timestamptz text in UTC).
Message relay_message(const once::WalMessage& m);
// A keyed WalMessage's key_owner and key_seq (uuid text).
WalKeyOrder relay_key_order(const once::WalMessage& m);

class WalStream final : public ClaimSource {
public:
    static constexpr size_t kOpenBatches = 2;
    // Decoded messages queued at most: beyond, the stream is not read (the server's socket
    // buffer and then the walsender wait) until the sink catches up; status updates still go
    // out, so wal_sender_timeout does not end the stream.
    static constexpr size_t kMaxQueued = 20000;

    // A standby relay tries the slot this often at most (--reconnect-max, if shorter).
    static constexpr Millis kStandbyRetry{1000};
    // While the slot is not usable (missing, invalidated, unsafe with physical standbys), it
    // is looked at again this often: an operator who recreates it needs no relay restart.
    static constexpr std::chrono::seconds kSlotRecheck{10};

    WalStream(std::unique_ptr<wal::WalReader> reader, std::unique_ptr<WalStore> store, Metrics& metrics,
              Millis reconnect_max, std::vector<std::string> topics = {}, bool accept_slot_loss_on_failover = false);
    // Topic patterns of the messages to publish (empty: all); a reload changes them.
    void set_topics(std::vector<std::string> topics) { topics_ = std::move(topics); }
    ClaimMode mode() const override { return ClaimMode::wal; }

    // Opens the stream when due, reads what has arrived, confirms what may be. Never throws:
    // a failure is logged and the stream reopens with backoff.
    void pump(Clock::time_point now) override;
    // Closes the stream (after a last status update with the confirmed position).
    void close();
    // The relay is stopping: nothing more is claimed, the stream closes once the open batches
    // are settled, and only now does the drain bound (abandon) drop what is unsettled.
    void shutdown() { stopped_ = true; }

    bool is_open() const { return reader_->is_open(); }
    bool standing_by() const { return standing_by_; }   // another connection streams the slot
    size_t queued() const { return pending_.size(); }   // decoded, not in a batch yet
    wal::Lsn confirmed() const { return confirmed_; }
    // The last verdict on the slot (usable until one was read).
    wal::SlotVerdict slot_verdict() const { return verdict_; }

    bool may_claim() const override;
    // Takes up to request.batch queued messages as the next answer.
    void start_claim(const ClaimRequest& request) override;
    std::vector<ClaimAnswer> collect_claims() override;
    bool give_back_unopened(size_t lane) override;   // back to the front of the queue
    void open_batch(size_t lane, Batch batch) override;
    void keep_claims(Clock::time_point) override {}
    // Settles every finished batch (acks, write-backs) and confirms; `on_settled` per batch.
    // A write-back that fails leaves the batch for a later pass (after a second).
    void settle_finished(const std::function<void(const SettleOutcome&)>& on_settled) override;
    void stop(const std::string& why) override;
    // Stopping (shutdown), the drain bound passed: resets the stream; returns 0. Otherwise
    // (the database is away) nothing: the stream has its own connection.
    size_t abandon(const std::string& why) override;
    size_t database_lost(const std::string&) override { return 0; }   // the stream has its own connection

    void open_batches(std::vector<Batch*>& out) override;
    size_t open_count() const override { return batches_.size() + (answered_ ? 1 : 0); }
    bool settlement_due() const override;
    void poll_fds(std::vector<pollfd>& fds) const override;

private:
    struct Queued {
        Message message;
        wal::Lsn commit_lsn;
        WalKeyOrder order;
        uint32_t xid = 0;   // its transaction's
    };
    struct OpenBatch {
        Batch batch;
        std::vector<wal::Lsn> commit_lsns;   // per entry
        std::vector<WalKeyOrder> orders;     // per entry
        std::vector<bool> settled;           // per entry
    };
    using KeyOwner = std::pair<std::string, uint32_t>;
    // A keyed message at the queue's front whose key has a message in the table: written back
    // behind it and settled. false: it is to be published (or the database could not be asked:
    // `failed`).
    bool wrote_back_behind_its_key(const Queued& q, bool& failed);
    void release_fences(Clock::time_point now);
    // How many of the first `limit` queued messages, in order, other sessions can see already;
    // false: the database could not be asked.
    bool visible_prefix(size_t limit, size_t& visible);
    void stop_before_newer_format(const wal::NewerFormatEvent& e);
    void handle(std::vector<wal::WalEvent>& events, Clock::time_point now);
    void log_skipped(uint64_t count);
    void confirm(Clock::time_point now);
    void reset(const std::string& why, Clock::time_point now);
    void stand_by(const std::string& why, Clock::time_point now);
    bool serves(const std::string& topic) const;
    bool slot_usable(Clock::time_point now);   // false: the stream stays closed (logged once per verdict)
    void publish_lag();
    bool settle_batch(OpenBatch& b, std::vector<Queued>& requeue);   // false: a write-back failed
    // A write-back whose key's lock is held, retried aside (retry_waiting_write_backs).
    struct WaitingWriteBack {
        Message message;
        wal::Lsn commit_lsn;
        WalKeyOrder order;
        int attempts;
        std::string error;
        bool dead;
        bool from_batch;   // the sink's refusal (counted as nacked or dead), not behind its key
        std::optional<Millis> retry_after{};   // the sink's Retry-After
    };
    void wait_for_lock(WaitingWriteBack w, const std::string& why);
    void retry_waiting_write_backs(Clock::time_point now);
    void written_back(const WaitingWriteBack& w);   // settled, its key remembered and fenced

    std::unique_ptr<wal::WalReader> reader_;
    std::unique_ptr<WalStore> store_;
    Metrics& metrics_;
    Millis reconnect_max_;
    std::vector<std::string> topics_;
    bool accept_slot_loss_on_failover_;
    wal::SlotVerdict verdict_ = wal::SlotVerdict::usable;
    std::vector<std::string> warned_;   // the slot warnings logged, so each is logged once
    wal::FlushTracker tracker_;
    std::deque<Queued> pending_;
    std::optional<std::vector<Queued>> answered_;   // the claim taken, until open_batch
    std::deque<OpenBatch> batches_;
    bool stopped_ = false;
    bool failing_ = false;              // logged the failure; logged again when open
    int failures_ = 0;
    bool opened_once_ = false;
    bool standing_by_ = false;          // the slot streams to another connection: said once
    Clock::time_point reopen_at_{};
    Clock::time_point write_back_retry_at_{};
    wal::Lsn confirmed_ = 0;
    wal::Lsn sent_ = 0;                  // confirmed position in the last status update we sent
    Clock::time_point last_sent_{};
    std::set<KeyOwner> in_flight_keys_;          // keys of messages claimed and not yet settled
    std::set<KeyOwner> written_back_keys_;       // keys written back: later stream messages follow them
    std::optional<wal::SnapshotXids> snapshot_;  // the last one read: what was visible to it stays visible
    bool stalled_at_newer_format_ = false;       // read up to a message of a newer format: no further
    int fences_left_ = 0;                        // rows still fenced, as last released
    std::deque<WaitingWriteBack> waiting_write_backs_;   // their keys' lock held; keys in flight
    Clock::time_point waiting_retry_at_{};
    bool waiting_logged_ = false;                // said once per episode
    wal::Lsn fences_released_to_ = 0;
    // pg_once messages skipped as unauthentic or malformed: anyone may emit them, as many as
    // they like, so they are logged at most once per interval, with their count.
    RateLimitedLog skipped_log_{std::chrono::seconds(10)};
    std::string last_skipped_;                   // the latest one's position and reason
};

}  // namespace once::relay
