#include "claim/wal_stream.hpp"

#include "core/backoff.hpp"
#include "core/topic.hpp"
#include "wal/replication_frames.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>

namespace once::relay {

namespace {

// Digits by hand, not snprintf: this runs for every message the stream carries, and
// snprintf was 6 % of the relay's CPU while it drained a backlog (perf, 100k messages).
void put_digits(char* at, long long v, int width) {
    for (int i = width - 1; i >= 0; --i, v /= 10) at[i] = static_cast<char>('0' + v % 10);
}

std::string timestamptz_text(int64_t unix_us) {
    int64_t secs = unix_us / 1'000'000, us = unix_us % 1'000'000;
    if (us < 0) { us += 1'000'000; --secs; }
    std::time_t t = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    long long year = tm.tm_year + 1900LL;
    if (year < 0 || year > 9999) {   // (not a time pg_once writes; kept exact all the same)
        char buf[64];
        std::snprintf(buf, sizeof buf, "%04lld-%02d-%02d %02d:%02d:%02d.%06lld+00", year, tm.tm_mon + 1, tm.tm_mday,
                      tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(us));
        return buf;
    }
    std::string out = "0000-00-00 00:00:00.000000+00";
    put_digits(&out[0], year, 4);
    put_digits(&out[5], tm.tm_mon + 1, 2);
    put_digits(&out[8], tm.tm_mday, 2);
    put_digits(&out[11], tm.tm_hour, 2);
    put_digits(&out[14], tm.tm_min, 2);
    put_digits(&out[17], tm.tm_sec, 2);
    put_digits(&out[20], us, 6);
    return out;
}

// A status update with a new flush position at most this often (the reader sends one every
// status interval anyway).
constexpr std::chrono::milliseconds kConfirmEvery{200};
constexpr std::chrono::seconds kWriteBackRetry{1};
constexpr const char* kBehindItsKey = "behind an earlier message of its key in the outbox table";
// While the queue is full and the stream not read: a status update this often.
constexpr std::chrono::seconds kQuietStatusEvery{10};

}  // namespace

Message relay_message(const once::WalMessage& m) {
    Message r;
    r.id = once::uuid_to_string(m.id);
    r.topic = m.topic;
    r.has_key = m.key.has_value();
    if (m.key) r.key = *m.key;
    r.payload = m.payload;
    if (m.headers) r.headers = *m.headers;
    r.attempt = 1;
    r.created_at = timestamptz_text(m.created_at_us);
    return r;
}

WalKeyOrder relay_key_order(const once::WalMessage& m) {
    if (!m.key) return {};
    return WalKeyOrder{m.key_owner, once::uuid_to_string(m.key_seq)};
}

WalStream::WalStream(std::unique_ptr<wal::WalReader> reader, std::unique_ptr<WalStore> store, Metrics& metrics,
                     Millis reconnect_max, std::vector<std::string> topics, bool accept_slot_loss_on_failover)
    : reader_(std::move(reader)), store_(std::move(store)), metrics_(metrics), reconnect_max_(reconnect_max),
      topics_(std::move(topics)), accept_slot_loss_on_failover_(accept_slot_loss_on_failover) {
    metrics_.wal_stream_active = 0;
    metrics_.wal_slot_verdict = static_cast<int>(wal::SlotVerdict::usable);
    metrics_.wal_oldest_pending_commit_us = 0;
}

bool WalStream::serves(const std::string& topic) const {
    if (topics_.empty()) return true;
    for (const auto& p : topics_)
        if (once::topic_matches(p, topic)) return true;
    return false;
}

void WalStream::stand_by(const std::string& why, Clock::time_point now) {
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
bool WalStream::slot_usable(Clock::time_point now) {
    wal::SlotAssessment a = wal::assess_slot(store_->read_slot(), accept_slot_loss_on_failover_);
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
void WalStream::publish_lag() {
    if (!reader_->is_open()) return;
    std::optional<int64_t> t = tracker_.oldest_pending_commit_time();
    metrics_.wal_oldest_pending_commit_us = t ? *t + wal::kPgEpochOffsetUs : 0;
}

void WalStream::reset(const std::string& why, Clock::time_point now) {
    if (reader_->is_open()) {
        try { reader_->close(); } catch (const std::exception&) {}
    }
    size_t dropped = pending_.size() + (answered_ ? answered_->size() : 0);
    for (const auto& b : batches_) dropped += b.batch.size();
    if (!failing_)
        spdlog::warn("WAL stream: {}; reopening from the slot's confirmed position {} ({} unsettled message(s) come "
                     "again)", why, wal::format_lsn(confirmed_), dropped);
    else
        spdlog::debug("WAL stream: {}", why);
    failing_ = true;
    metrics_.wal_stream_active = 0;
    pending_.clear();
    answered_.reset();
    batches_.clear();
    in_flight_keys_.clear();
    waiting_write_backs_.clear();   // (unconfirmed: they come again)
    metrics_.wal_write_backs_waiting = 0;
    waiting_logged_ = false;
    tracker_ = wal::FlushTracker{};
    stalled_at_newer_format_ = false;   // (met again when the stream reaches it)
    ++failures_;
    BackoffPolicy p{100, std::max<int64_t>(100, reconnect_max_.count())};
    reopen_at_ = now + Millis(backoff_delay_ms(p, std::min(failures_, 30), 0.75));
}

void WalStream::pump(Clock::time_point now) {
    if (uint64_t held = skipped_log_.due(now)) log_skipped(held);
    if (stopped_) {
        if (reader_->is_open() && open_count() == 0) close();
        if (!reader_->is_open()) return;
    }
    if (!reader_->is_open()) {
        if (now < reopen_at_) return;
        try {
            if (!slot_usable(now)) return;
            // Never publish unauthenticated messages: anyone who may call pg_logical_emit_message
            // could inject one. Without the key the stream stays closed (retried with backoff).
            std::optional<std::string> key = store_->message_key();
            if (!key)
                throw std::runtime_error("the database has no once.wal_secret(): pg_once is older than 0.3 "
                                         "(ALTER EXTENSION pg_once UPDATE), so its messages cannot be authenticated");
            // Everything below the slot's confirmed position was settled (by this relay before
            // a kill -9, say): release those fences. The keys still fenced have stream messages
            // ahead that follow them into the table.
            fences_left_ = store_->release_fences(std::nullopt);
            written_back_keys_.clear();
            if (fences_left_ > 0)
                for (auto& k : store_->fenced_keys()) written_back_keys_.insert(std::move(k));
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
        } catch (const wal::SlotInUse& e) {
            stand_by(e.what(), now);
            return;
        } catch (const std::exception& e) {
            reset(std::string("cannot open: ") + e.what(), now);
            return;
        }
    }
    retry_waiting_write_backs(now);   // (before confirm: one written back settles its message)
    std::vector<wal::WalEvent> events;
    try {
        if (pending_.size() >= kMaxQueued || stalled_at_newer_format_) {   // read nothing more for now
            if (now - last_sent_ >= kQuietStatusEvery) {
                reader_->send_status();
                sent_ = confirmed_;
                last_sent_ = now;
            }
            confirm(now);
            return;
        }
        bool open = reader_->read_available(events);
        handle(events, now);
        if (!open) {
            reset("the server ended the stream", now);
            return;
        }
        confirm(now);
        publish_lag();
    } catch (const std::exception& e) {
        reset(e.what(), now);
    }
}

void WalStream::log_skipped(uint64_t count) {
    if (count == 1) spdlog::warn("WAL stream: skipped a pg_once message {}", last_skipped_);
    else spdlog::warn("WAL stream: skipped {} pg_once messages since the last such line; the latest {}", count, last_skipped_);
}

void WalStream::handle(std::vector<wal::WalEvent>& events, Clock::time_point now) {
    for (auto& ev : events) {
        if (auto* m = std::get_if<wal::OutboxMessageEvent>(&ev)) {
            if (!serves(m->message.topic)) {   // another relay group's: it has its own slot
                metrics_.wal_passed_over++;
                continue;
            }
            tracker_.message_received(m->commit_lsn, m->commit_time);
            pending_.push_back(Queued{relay_message(m->message), m->commit_lsn, relay_key_order(m->message), m->xid});
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
void WalStream::stop_before_newer_format(const wal::NewerFormatEvent& e) {
    stalled_at_newer_format_ = true;
    if (metrics_.wal_newer_format.load() != e.version)
        spdlog::error("WAL stream stopped before a message at {} (transaction committed at {}): {}. Upgrade "
                      "once-relay to the extension's version; nothing from there on is published or confirmed, and "
                      "the slot retains the WAL meanwhile",
                      wal::format_lsn(e.message_lsn), wal::format_lsn(e.commit_lsn), e.error);
    metrics_.wal_newer_format = e.version;
}

void WalStream::confirm(Clock::time_point now) {
    if (!reader_->is_open()) return;
    const bool idle = pending_.empty() && !answered_ && batches_.empty();
    // (stalled, the reader's keepalive position may lie past the unread message)
    if (idle && !stalled_at_newer_format_) tracker_.idle(reader_->idle_position());
    wal::Lsn f = tracker_.flush_position();
    if (f > confirmed_) confirmed_ = f;
    reader_->confirm(confirmed_);
    if (confirmed_ > sent_ && now - last_sent_ >= kConfirmEvery) {
        reader_->send_status();
        sent_ = confirmed_;
        last_sent_ = now;
        release_fences(now);   // (as often as status updates: not a database call per pump)
    } else if (fences_left_ > 0 && idle && now - last_sent_ >= kConfirmEvery) {
        // Fences wait for the confirmation to pass the write-backs' own WAL, which holds no
        // pg_once message: a keepalive gives the idle position past it.
        reader_->send_status(true);
        last_sent_ = now;
        release_fences(now);
    }
}

void WalStream::release_fences(Clock::time_point) {
    if (fences_left_ == 0 || confirmed_ <= fences_released_to_) return;
    try {
        fences_left_ = store_->release_fences(confirmed_);
        fences_released_to_ = confirmed_;
    } catch (const std::exception& e) {
        spdlog::warn("WAL stream: releasing the write-backs' fences up to {} failed (retrying): {}",
                     wal::format_lsn(confirmed_), e.what());
    }
}

void WalStream::close() {
    if (uint64_t held = skipped_log_.take()) log_skipped(held);   // (they are counted: say so before going)
    if (!reader_->is_open()) return;
    try {
        reader_->confirm(confirmed_);
        reader_->close();   // sends the last status update
    } catch (const std::exception& e) {
        spdlog::warn("WAL stream: closing: {}", e.what());
    }
}

bool WalStream::may_claim() const {
    if (stopped_ || !reader_->is_open() || pending_.empty() || answered_ || batches_.size() >= kOpenBatches) return false;
    const Queued& front = pending_.front();
    if (front.message.has_key && in_flight_keys_.count(KeyOwner{front.message.key, front.order.key_owner}))
        return false;   // waits until its key's message in flight settles
    if (Clock::now() < write_back_retry_at_) return false;
    for (const auto& b : batches_)
        if (!b.batch.all_dispatched()) return false;
    return true;
}

bool WalStream::wrote_back_behind_its_key(const Queued& q, bool& failed) {
    KeyOwner k{q.message.key, q.order.key_owner};
    if (!written_back_keys_.count(k)) return false;
    try {
        if (!store_->key_in_table(k.first, k.second)) {
            written_back_keys_.erase(k);   // the table has none left: the key's home is the stream again
            return false;
        }
        store_->write_back(WalWriteBack{&q.message, 0, kBehindItsKey, false, q.order});
    } catch (const WalWriteBackBusy& e) {
        // Aside until the key's lock is free; its key in flight keeps the key's later messages behind it.
        wait_for_lock(WaitingWriteBack{q.message, q.commit_lsn, q.order, 0, kBehindItsKey, false, false}, e.what());
        in_flight_keys_.insert(k);
        return true;
    } catch (const std::exception& e) {
        spdlog::warn("WAL stream: writing back message {} behind its key failed (retrying): {}", q.message.id, e.what());
        write_back_retry_at_ = Clock::now() + kWriteBackRetry;
        failed = true;
        return false;
    }
    metrics_.wal_written_back++;
    tracker_.message_settled(q.commit_lsn);
    fences_left_++;
    return true;
}

void WalStream::start_claim(const ClaimRequest& request) {
    size_t n = static_cast<size_t>(std::max(1, request.batch));
    // Only what other sessions can see already (also before writing anything back).
    size_t visible = 0;
    if (!visible_prefix(std::min(n, pending_.size()), visible)) return;
    std::vector<Queued> taken;
    std::set<KeyOwner> taken_keys;
    while (visible > 0 && taken.size() < n && !pending_.empty()) {
        Queued& q = pending_.front();
        if (q.message.has_key) {
            KeyOwner k{q.message.key, q.order.key_owner};
            // Never two messages of a key in flight: the claim ends before this one.
            if (in_flight_keys_.count(k) || taken_keys.count(k)) break;
            bool failed = false;
            if (wrote_back_behind_its_key(q, failed)) {
                pending_.pop_front();
                --visible;
                continue;
            }
            if (failed) break;
            taken_keys.insert(k);
        }
        taken.push_back(std::move(q));
        pending_.pop_front();
        --visible;
    }
    in_flight_keys_.insert(taken_keys.begin(), taken_keys.end());
    if (taken.empty()) return;   // (all written back, the front waits for its key, or is not visible yet)
    answered_ = std::move(taken);
}

bool WalStream::visible_prefix(size_t limit, size_t& visible) {
    auto count = [&] {
        size_t v = 0;
        while (v < limit && wal::committed_xid_visible(pending_[v].xid, *snapshot_)) ++v;
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
    ClaimAnswer a{0, {}, 0};
    for (const Queued& q : *answered_) a.messages.push_back(q.message);
    out.push_back(std::move(a));
    return out;
}

bool WalStream::give_back_unopened(size_t) {
    if (!answered_) return true;
    for (auto it = answered_->rbegin(); it != answered_->rend(); ++it) {
        if (it->message.has_key) in_flight_keys_.erase(KeyOwner{it->message.key, it->order.key_owner});
        pending_.push_front(std::move(*it));
    }
    answered_.reset();
    return true;
}

void WalStream::open_batch(size_t, Batch batch) {
    OpenBatch b{std::move(batch), {}, {}, {}};
    if (answered_) {
        for (const Queued& q : *answered_) {
            b.commit_lsns.push_back(q.commit_lsn);
            b.orders.push_back(q.order);
        }
        answered_.reset();
    }
    b.settled.assign(b.commit_lsns.size(), false);
    if (stopped_) b.batch.stop("relay stopping");
    batches_.push_back(std::move(b));
}

bool WalStream::settle_batch(OpenBatch& b, std::vector<Queued>& requeue) {
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
                wait_for_lock(WaitingWriteBack{e.msg, b.commit_lsns[i], b.orders[i], attempts, e.error, dead, true,
                                               retry_after},
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
            if (e.msg.has_key) {   // fenced in the table: the key's later stream messages follow it
                written_back_keys_.insert(KeyOwner{e.msg.key, b.orders[i].key_owner});
                fences_left_++;
            }
            break;
        }
        case Batch::State::returned:
            // Never handed to the sink: published again from the queue (or, stopping, after a restart).
            if (e.msg.has_key) in_flight_keys_.erase(KeyOwner{e.msg.key, b.orders[i].key_owner});
            requeue.push_back(Queued{e.msg, b.commit_lsns[i], b.orders[i]});
            b.settled[i] = true;
            continue;
        case Batch::State::waiting:
        case Batch::State::in_flight:
            return false;   // (not finished: not called)
        }
        b.settled[i] = true;
        tracker_.message_settled(b.commit_lsns[i]);
        if (e.msg.has_key) in_flight_keys_.erase(KeyOwner{e.msg.key, b.orders[i].key_owner});
    }
    return true;
}

void WalStream::wait_for_lock(WaitingWriteBack w, const std::string& why) {
    if (!waiting_logged_)
        spdlog::warn("WAL stream: writing back message {} waits for its key's lock ({}); retried every second while "
                     "the stream goes on, confirmed up to before it (once_wal_write_backs_waiting)",
                     w.message.id, why);
    waiting_logged_ = true;
    if (waiting_write_backs_.empty()) waiting_retry_at_ = Clock::now() + kWriteBackRetry;
    waiting_write_backs_.push_back(std::move(w));
    metrics_.wal_write_backs_waiting = static_cast<int64_t>(waiting_write_backs_.size());
}

void WalStream::written_back(const WaitingWriteBack& w) {
    metrics_.wal_written_back++;
    if (w.from_batch) (w.dead ? metrics_.dead : metrics_.nacked)++;
    tracker_.message_settled(w.commit_lsn);
    if (w.message.has_key) {   // fenced in the table: the key's later stream messages follow it
        KeyOwner k{w.message.key, w.order.key_owner};
        in_flight_keys_.erase(k);
        written_back_keys_.insert(k);
        fences_left_++;
    }
}

// In order; each waits for a different key (one message of a key in flight), so a busy one
// does not hold the others.
void WalStream::retry_waiting_write_backs(Clock::time_point now) {
    if (waiting_write_backs_.empty() || now < waiting_retry_at_) return;
    for (auto it = waiting_write_backs_.begin(); it != waiting_write_backs_.end();) {
        try {
            store_->write_back(WalWriteBack{&it->message, it->attempts, it->error, it->dead, it->order, it->retry_after});
        } catch (const WalWriteBackBusy&) {
            ++it;
            continue;
        } catch (const std::exception& e) {
            spdlog::warn("WAL stream: writing back message {} to the outbox table failed (retrying): {}",
                         it->message.id, e.what());
            break;
        }
        written_back(*it);
        it = waiting_write_backs_.erase(it);
    }
    metrics_.wal_write_backs_waiting = static_cast<int64_t>(waiting_write_backs_.size());
    if (!waiting_write_backs_.empty()) {
        waiting_retry_at_ = now + kWriteBackRetry;
    } else if (waiting_logged_) {
        spdlog::info("WAL stream: the write-backs that waited for their key's lock are written back");
        waiting_logged_ = false;
    }
}

void WalStream::settle_finished(const std::function<void(const SettleOutcome&)>& on_settled) {
    auto now = Clock::now();
    std::vector<Queued> requeue;
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
    for (auto it = requeue.rbegin(); it != requeue.rend(); ++it) pending_.push_front(std::move(*it));
    confirm(now);
    publish_lag();
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
    if (!waiting_write_backs_.empty() && Clock::now() >= waiting_retry_at_) return true;
    return !batches_.empty() && batches_.front().batch.finished() && Clock::now() >= write_back_retry_at_;
}

void WalStream::poll_fds(std::vector<pollfd>& fds) const {
    bool reading = reader_->is_open() && pending_.size() < kMaxQueued && !stalled_at_newer_format_;
    fds.push_back(pollfd{reading ? reader_->socket() : -1, POLLIN, 0});
}

}  // namespace once::relay
