#include "claim/wal_stream_session.hpp"

#include "claim/wal_relay_message.hpp"
#include "core/backoff.hpp"
#include "core/topic.hpp"
#include "wal/replication_frames.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace once::relay {

namespace {

// A status update with a new flush position at most this often (the reader sends one every
// status interval anyway).
constexpr std::chrono::milliseconds kConfirmEvery{200};
// While the queue is full and the stream not read: a status update this often.
constexpr std::chrono::seconds kQuietStatusEvery{10};

}  // namespace

WalStreamSession::WalStreamSession(std::unique_ptr<wal::WalReader> reader, WalStore& store, Metrics& metrics,
                                   Millis reconnect_max, std::vector<std::string> topics,
                                   bool accept_slot_loss_on_failover)
    : reader_(std::move(reader)), store_(store), metrics_(metrics), reconnect_max_(reconnect_max),
      topics_(std::move(topics)), accept_slot_loss_on_failover_(accept_slot_loss_on_failover) {
    metrics_.wal_stream_active = 0;
    metrics_.wal_slot_verdict = static_cast<int>(wal::SlotVerdict::usable);
    metrics_.wal_oldest_pending_commit_us = 0;
}

bool WalStreamSession::serves(const std::string& topic) const {
    if (topics_.empty()) return true;
    for (const auto& p : topics_)
        if (once::topic_matches(p, topic)) return true;
    return false;
}

void WalStreamSession::stand_by(const std::string& why, Clock::time_point now) {
    Millis every = std::min(kStandbyRetry, reconnect_max_);
    if (!standing_by_)
        spdlog::info("WAL stream: standing by, another connection streams the slot ({}); this relay claims the outbox "
                     "table and tries the slot every {} ms",
                     why, every.count());
    standing_by_ = true;
    failing_ = false;
    failures_ = 0;
    metrics_.wal_stream_active = 0;
    reopen_at_ = now + every;
}

// Looked at before every open: a broken stream is how an invalidation shows while streaming
// (PostgreSQL ends the walsender), and a reopen finds the reason here. Not usable: the stream
// stays closed, the table claims go on, /healthz fails and the gauge says why; the slot is
// looked at again every kSlotRecheck, and never created or recreated by the relay.
bool WalStreamSession::slot_usable(Clock::time_point now) {
    wal::SlotAssessment a = wal::assess_slot(store_.read_slot(), accept_slot_loss_on_failover_);
    wal::SlotVerdict before = verdict_;
    verdict_ = a.verdict;
    metrics_.wal_slot_verdict = static_cast<int>(a.verdict);
    if (a.verdict != wal::SlotVerdict::usable) {
        if (a.verdict != before) spdlog::error("WAL stream closed: {}", a.error);
        else spdlog::debug("WAL stream still closed: {}", a.error);
        reopen_at_ = now + kSlotRecheck;
        return false;
    }
    if (before != wal::SlotVerdict::usable) spdlog::info("WAL stream: the replication slot is usable again");
    for (const auto& w : a.warnings) {
        if (std::find(warned_.begin(), warned_.end(), w) != warned_.end()) continue;
        spdlog::warn("WAL stream: {}", w);
        warned_.push_back(w);
    }
    return true;
}

// once_wal_slot_lag_seconds reads the commit time of the oldest transaction not confirmed yet.
// A reset keeps the last value: the unconfirmed transactions come again from the slot, so
// their age keeps growing while the stream is down.
void WalStreamSession::publish_lag() {
    if (!reader_->is_open()) return;
    std::optional<int64_t> t = tracker_.oldest_pending_commit_time();
    metrics_.wal_oldest_pending_commit_us = t ? *t + wal::kPgEpochOffsetUs : 0;
}

void WalStreamSession::reset(const std::string& why, Clock::time_point now, size_t claimed) {
    if (reader_->is_open()) {
        try { reader_->close(); } catch (const std::exception&) {}
    }
    size_t dropped = pending_.size() + claimed;
    if (!failing_)
        spdlog::warn("WAL stream: {}; reopening from the slot's confirmed position {} ({} unsettled message(s) come "
                     "again)", why, wal::format_lsn(confirmed_), dropped);
    else
        spdlog::debug("WAL stream: {}", why);
    failing_ = true;
    metrics_.wal_stream_active = 0;
    pending_.clear();
    tracker_ = wal::FlushTracker{};
    stalled_at_newer_format_ = false;   // (met again when the stream reaches it)
    ++failures_;
    BackoffPolicy p{100, std::max<int64_t>(100, reconnect_max_.count())};
    reopen_at_ = now + Millis(backoff_delay_ms(p, std::min(failures_, 30), 0.75));
}

void WalStreamSession::log_skipped_when_due(Clock::time_point now) {
    if (uint64_t held = skipped_log_.due(now)) log_skipped(held);
}

bool WalStreamSession::open_when_due(Clock::time_point now, const std::function<void()>& before_reading,
                                     std::string& failure) {
    if (reader_->is_open()) return true;
    if (now < reopen_at_) return false;
    try {
        if (!slot_usable(now)) return false;
        // Never publish unauthenticated messages: anyone who may call pg_logical_emit_message
        // could inject one. Without the key the stream stays closed (retried with backoff).
        std::optional<std::string> key = store_.message_key();
        if (!key)
            throw std::runtime_error("the database has no once.wal_secret(): pg_once is older than 0.3 "
                                     "(ALTER EXTENSION pg_once UPDATE), so its messages cannot be authenticated");
        before_reading();
        reader_->open(key);
        tracker_ = wal::FlushTracker{};
        sent_ = 0;
        if (opened_once_) metrics_.wal_stream_restarts++;
        if (standing_by_) spdlog::info("WAL stream: took the slot over (no other connection streams it now)");
        else if (failing_) spdlog::info("WAL stream open again");
        else spdlog::info("WAL stream open{}", key ? " (messages authenticated by their tag)" : "");
        opened_once_ = true;
        failing_ = false;
        standing_by_ = false;
        failures_ = 0;
        metrics_.wal_stream_active = 1;
        return true;
    } catch (const wal::SlotInUse& e) {
        stand_by(e.what(), now);
        return false;
    } catch (const std::exception& e) {
        failure = std::string("cannot open: ") + e.what();
        return false;
    }
}

WalStreamSession::Read WalStreamSession::read(Clock::time_point now) {
    if (pending_.size() >= kMaxQueued || stalled_at_newer_format_) {   // read nothing more for now
        if (now - last_sent_ >= kQuietStatusEvery) {
            reader_->send_status();
            sent_ = confirmed_;
            last_sent_ = now;
        }
        return Read::held;
    }
    // (the vector keeps its capacity between reads: allocating it anew per read was a tenth of
    // the relay's CPU draining a backlog, most of it malloc_consolidate)
    events_.clear();
    bool open = reader_->read_available(events_);
    handle(events_, now);
    events_.clear();
    return open ? Read::read : Read::ended;
}

void WalStreamSession::log_skipped(uint64_t count) {
    if (count == 1) spdlog::warn("WAL stream: skipped a pg_once message {}", last_skipped_);
    else spdlog::warn("WAL stream: skipped {} pg_once messages since the last such line; the latest {}", count, last_skipped_);
}

void WalStreamSession::handle(std::vector<wal::WalEvent>& events, Clock::time_point now) {
    for (auto& ev : events) {
        if (auto* m = std::get_if<wal::OutboxMessageEvent>(&ev)) {
            if (!serves(m->message.topic)) {   // another relay group's: it has its own slot
                metrics_.wal_passed_over++;
                continue;
            }
            tracker_.message_received(m->commit_lsn, m->commit_time);
            WalKeyOrder order = relay_key_order(m->message);   // (before its strings move)
            pending_.push_back(WalQueuedMessage{relay_message(std::move(m->message)), m->commit_lsn, std::move(order), m->xid});
        } else if (auto* end = std::get_if<wal::TransactionEndEvent>(&ev)) {
            tracker_.transaction_ended(end->commit_lsn, end->end_lsn, end->commit_time);
        } else if (auto* newer = std::get_if<wal::NewerFormatEvent>(&ev)) {
            stop_before_newer_format(*newer);
            return;   // nothing after it is read: its transaction never ends for the tracker
        } else {
            const auto& bad = std::get<wal::MalformedMessageEvent>(ev);
            // Never its content: it is not ours, and may be anything.
            (bad.unauthentic ? metrics_.wal_unauthentic : metrics_.wal_malformed)++;
            last_skipped_ = "at " + wal::format_lsn(bad.message_lsn) + " (transaction committed at " +
                            wal::format_lsn(bad.commit_lsn) + "): " + bad.error;
            if (uint64_t count = skipped_log_.record(now)) log_skipped(count);
        }
    }
}

// A message this relay cannot read is a newer extension's (its tag verified): skipping it
// would lose it. The stream is read no further, so the slot is never confirmed past its
// transaction; what came before it is published and confirmed as usual. The relay says so
// once, /healthz fails and once_wal_newer_format names the version, until a relay that reads
// it (an upgraded once-relay) takes over from the slot's confirmed position.
void WalStreamSession::stop_before_newer_format(const wal::NewerFormatEvent& e) {
    stalled_at_newer_format_ = true;
    if (metrics_.wal_newer_format.load() != e.version)
        spdlog::error("WAL stream stopped before a message at {} (transaction committed at {}): {}. Upgrade "
                      "once-relay to the extension's version; nothing from there on is published or confirmed, and "
                      "the slot retains the WAL meanwhile",
                      wal::format_lsn(e.message_lsn), wal::format_lsn(e.commit_lsn), e.error);
    metrics_.wal_newer_format = e.version;
}

bool WalStreamSession::confirm(Clock::time_point now, bool nothing_claimed, bool keepalive_wanted) {
    if (!reader_->is_open()) return false;
    const bool idle = pending_.empty() && nothing_claimed;
    // (stalled, the reader's keepalive position may lie past the unread message)
    if (idle && !stalled_at_newer_format_) tracker_.idle(reader_->idle_position());
    wal::Lsn f = tracker_.flush_position();
    if (f > confirmed_) confirmed_ = f;
    reader_->confirm(confirmed_);
    if (confirmed_ > sent_ && now - last_sent_ >= kConfirmEvery) {
        reader_->send_status();
        sent_ = confirmed_;
        last_sent_ = now;
        return true;
    }
    if (keepalive_wanted && idle && now - last_sent_ >= kConfirmEvery) {
        // Fences wait for the confirmation to pass the write-backs' own WAL, which holds no
        // pg_once message: a keepalive gives the idle position past it.
        reader_->send_status(true);
        last_sent_ = now;
        return true;
    }
    return false;
}

void WalStreamSession::close() {
    if (uint64_t held = skipped_log_.take()) log_skipped(held);   // (they are counted: say so before going)
    if (!reader_->is_open()) return;
    try {
        reader_->confirm(confirmed_);
        reader_->close();   // sends the last status update
    } catch (const std::exception& e) {
        spdlog::warn("WAL stream: closing: {}", e.what());
    }
}

void WalStreamSession::poll_fds(std::vector<pollfd>& fds) const {
    bool reading = reader_->is_open() && pending_.size() < kMaxQueued && !stalled_at_newer_format_;
    fds.push_back(pollfd{reading ? reader_->socket() : -1, POLLIN, 0});
}

}  // namespace once::relay
