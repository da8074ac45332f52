// The WAL transport's replication session: the replication connection (wal::WalReader), the
// decoded messages queued in WAL order, and the position confirmed to the slot. It opens the
// stream when the slot is usable and due (standing by while another connection streams the
// slot, reopening with backoff after a failure), reads what has arrived, and confirms only as
// far as wal::FlushTracker allows (docs/design.md, "Confirmation rule"). What is claimed and
// settled is the claim source's (claim/wal_stream.hpp): it reports each settled message here.
//
// Blocking: opening queries the relay's ordinary database connection (the slot's health and
// the tag key) synchronously on the event loop, at most once per reopen (backoff, or
// kSlotRecheck while the slot is not usable); the replication connection itself is read
// without blocking.
#pragma once

#include "claim/wal_store.hpp"
#include "duration.hpp"
#include "message.hpp"
#include "metrics.hpp"
#include "rate_limited_log.hpp"
#include "wal/flush_tracker.hpp"
#include "wal/slot_health.hpp"
#include "wal/wal_reader.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct pollfd;

namespace once::relay {

// A decoded message, queued in WAL order until it is claimed.
struct WalQueuedMessage {
    Message message;
    wal::Lsn commit_lsn;
    WalKeyOrder order;
    uint32_t xid = 0;   // its transaction's
};

class WalStreamSession {
public:
    using Clock = std::chrono::steady_clock;
    // Decoded messages queued at most: beyond, the stream is not read (the server's socket
    // buffer and then the walsender wait) until the sink catches up; status updates still go
    // out, so wal_sender_timeout does not end the stream.
    static constexpr size_t kMaxQueued = 20000;
    // A standby relay tries the slot this often at most (--reconnect-max, if shorter).
    static constexpr Millis kStandbyRetry{1000};
    // While the slot is not usable (missing, invalidated, unsafe with physical standbys), it
    // is looked at again this often: an operator who recreates it needs no relay restart.
    static constexpr std::chrono::seconds kSlotRecheck{10};

    // What a read did.
    enum class Read {
        held,    // nothing read: the queue is full, or the stream stopped before a newer format
        read,    // what had arrived is queued
        ended,   // the server ended the stream
    };

    WalStreamSession(std::unique_ptr<wal::WalReader> reader, WalStore& store, Metrics& metrics, Millis reconnect_max,
                     std::vector<std::string> topics, bool accept_slot_loss_on_failover);
    void set_topics(std::vector<std::string> topics) { topics_ = std::move(topics); }

    bool is_open() const { return reader_->is_open(); }
    bool standing_by() const { return standing_by_; }   // another connection streams the slot
    wal::Lsn confirmed() const { return confirmed_; }
    wal::SlotVerdict slot_verdict() const { return verdict_; }
    // Decoded, not claimed yet, in WAL order.
    std::deque<WalQueuedMessage>& queue() { return pending_; }
    const std::deque<WalQueuedMessage>& queue() const { return pending_; }

    // Logs the skipped messages held back by the rate limit, when due.
    void log_skipped_when_due(Clock::time_point now);
    // Opens the stream when it is closed and due; `before_reading` runs once the slot is usable
    // and the tag key known, just before the stream opens. true: the stream is open. A failure
    // to open sets `failure` (for the caller's reset); standing by does not.
    bool open_when_due(Clock::time_point now, const std::function<void()>& before_reading, std::string& failure);
    // Reads what has arrived into the queue. Throws on a failure.
    Read read(Clock::time_point now);
    // Confirms as far as the tracker allows (with nothing queued or claimed, up to the idle
    // position); true when a status update went out (with `keepalive_wanted` and nothing to
    // confirm, an idle stream asks for one to learn the position past its own writes).
    bool confirm(Clock::time_point now, bool nothing_claimed, bool keepalive_wanted);
    // A message of the transaction committed at `commit_lsn` is settled.
    void settled(wal::Lsn commit_lsn) { tracker_.message_settled(commit_lsn); }
    void publish_lag();
    // Closes the stream, forgets what is queued and unconfirmed (`claimed`: how many more the
    // claim source drops), and reopens from the slot's confirmed position after a backoff.
    void reset(const std::string& why, Clock::time_point now, size_t claimed);
    // Closes the stream (after a last status update with the confirmed position).
    void close();
    void poll_fds(std::vector<pollfd>& fds) const;

private:
    void handle(std::vector<wal::WalEvent>& events, Clock::time_point now);
    void stop_before_newer_format(const wal::NewerFormatEvent& e);
    void log_skipped(uint64_t count);
    void stand_by(const std::string& why, Clock::time_point now);
    bool serves(const std::string& topic) const;
    bool slot_usable(Clock::time_point now);   // false: the stream stays closed (logged once per verdict)

    std::unique_ptr<wal::WalReader> reader_;
    WalStore& store_;
    Metrics& metrics_;
    Millis reconnect_max_;
    std::vector<std::string> topics_;
    bool accept_slot_loss_on_failover_;
    wal::SlotVerdict verdict_ = wal::SlotVerdict::usable;
    std::vector<std::string> warned_;   // the slot warnings logged, so each is logged once
    wal::FlushTracker tracker_;
    std::deque<WalQueuedMessage> pending_;
    std::vector<wal::WalEvent> events_;  // what one read decoded (reused)
    bool failing_ = false;              // logged the failure; logged again when open
    int failures_ = 0;
    bool opened_once_ = false;
    bool standing_by_ = false;          // the slot streams to another connection: said once
    Clock::time_point reopen_at_{};
    wal::Lsn confirmed_ = 0;
    wal::Lsn sent_ = 0;                  // confirmed position in the last status update we sent
    Clock::time_point last_sent_{};
    bool stalled_at_newer_format_ = false;   // read up to a message of a newer format: no further
    // pg_once messages skipped as unauthentic or malformed: anyone may emit them, as many as
    // they like, so they are logged at most once per interval, with their count.
    RateLimitedLog skipped_log_{std::chrono::seconds(10)};
    std::string last_skipped_;                   // the latest one's position and reason
};

}  // namespace once::relay
