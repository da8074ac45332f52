#include "relay.hpp"

#include "core/backoff.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace once::relay {

namespace {
int64_t unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

Millis reconnect_delay(int failures, Millis cap, double u) {
    BackoffPolicy p{100, std::max<int64_t>(100, cap.count())};
    return Millis(backoff_delay_ms(p, std::max(1, std::min(failures, 30)), u));
}

struct Relay::Slot {
    enum State { waiting, in_flight, done } state = waiting;
    Clock::time_point started;
};

Relay::Relay(Options options, Reloader reloader, std::unique_ptr<Sink> sink, Metrics& metrics, SignalFd& signals,
             SystemdNotifier& notifier)
    : opt_(std::move(options)), reloader_(std::move(reloader)), sink_(std::move(sink)), metrics_(metrics),
      signals_(signals), notifier_(notifier), db_(opt_.db, opt_.name, opt_.connect_timeout, opt_.synchronous_commit),
      rng_(std::random_device{}()) {
    auto now = Clock::now();
    next_purge_ = now;
    next_saga_tick_ = now;
    next_stats_ = now + opt_.stats_interval;
    stats_since_ = now;
}

int64_t Relay::ms_until(Clock::time_point t) const {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
    return std::max<int64_t>(0, ms);
}

void Relay::poll_signals() {
    signals_.read(events_);
    if (events_.stop && !stopping_) {
        stopping_ = true;
        stop_deadline_ = Clock::now() + opt_.shutdown_timeout;
        notifier_.stopping();
        spdlog::info("stopping: finishing in-flight work (at most {})", format_duration(opt_.shutdown_timeout));
    }
}

void Relay::connect_db() {
    try {
        db_.connect();
    } catch (const DbLost& e) {
        on_db_lost(e.what());
        return;
    } catch (const std::exception& e) {
        on_db_lost(e.what());
        return;
    }
    metrics_.db_connected = true;
    if (ever_connected_) {
        metrics_.reconnects++;
        spdlog::info("reconnected to {} (after {} failed attempt(s)); draining", db_.server(), connect_failures_);
    } else {
        spdlog::info("connected to {} ({}), listening on {}", db_.server(), db_.redacted_conninfo(), kWakeChannel);
    }
    ever_connected_ = true;
    connect_failures_ = 0;
    need_claim_ = true;   // whatever was sent while we were away
    if (!ready_sent_) { notifier_.ready(); ready_sent_ = true; }
}

void Relay::on_db_lost(const std::string& why) {
    bool was = metrics_.db_connected.exchange(false);
    db_.disconnect();
    ++connect_failures_;
    double u = std::uniform_real_distribution<double>(0.5, 1.0)(rng_);
    int64_t delay = reconnect_delay(connect_failures_, opt_.reconnect_max, u).count();
    reconnect_at_ = Clock::now() + std::chrono::milliseconds(delay);
    if (was || connect_failures_ == 1 || connect_failures_ % 10 == 0)
        spdlog::warn("database unavailable: {} (retry in {}ms)", why, delay);
    else
        spdlog::debug("database unavailable: {} (retry in {}ms)", why, delay);
}

void Relay::flush_pending_acks() {
    if (pending_acks_.empty()) return;
    int64_t n = db_.ack(pending_acks_);
    metrics_.acked += static_cast<uint64_t>(n);
    stats_acked_ += static_cast<uint64_t>(n);
    if (n < static_cast<int64_t>(pending_acks_.size()))
        spdlog::warn("{} of {} messages delivered before the reconnect had been taken over by another claim; "
                     "they will be delivered again (the sink's dedupe drops them)",
                     pending_acks_.size() - n, pending_acks_.size());
    pending_acks_.clear();
}

void Relay::handle_reload() {
    events_.reload = false;
    notifier_.reloading();
    try {
        Options fresh = reloader_();
        auto restart = restart_only_changes(opt_, fresh);
        if (!restart.empty()) {
            std::string list;
            for (auto& s : restart) list += (list.empty() ? "" : ", ") + s;
            spdlog::warn("reload: {} changed but only take(s) effect after a restart; keeping the running value(s)", list);
        }
        fresh.db = opt_.db;
        fresh.sink = opt_.sink;
        fresh.name = opt_.name;
        fresh.metrics = opt_.metrics;
        fresh.connect_timeout = opt_.connect_timeout;
        fresh.synchronous_commit = opt_.synchronous_commit;
        opt_ = fresh;
        spdlog::set_level(spdlog::level::from_str(opt_.log_level));
        spdlog::info("reloaded configuration: batch {}, lease {}, poll-interval {}, max-in-flight {}, topics {}, maintenance {}",
                     opt_.batch, format_duration(opt_.lease), format_duration(opt_.poll_interval), opt_.max_in_flight,
                     opt_.topics.empty() ? std::string("all") : std::to_string(opt_.topics.size()) + " pattern(s)",
                     opt_.maintenance ? "on" : "off");
    } catch (const std::exception& e) {
        spdlog::error("reload failed, still running with the previous configuration: {}", e.what());
    }
    notifier_.ready();
}

void Relay::maintenance() {
    if (!opt_.maintenance || !db_.connected()) return;
    auto now = Clock::now();
    if (now >= next_purge_) {
        next_purge_ = now + opt_.purge_interval;
        try {
            if (db_.try_maintenance_lock()) {
                auto n = db_.purge();
                if (n && *n > 0) spdlog::info("maintenance: once.purge() removed {} rows", *n);
            }
        } catch (const DbLost&) {
            throw;
        } catch (const std::exception& e) {
            spdlog::warn("maintenance: once.purge() failed: {}", e.what());
        }
    }
    if (now >= next_saga_tick_) {
        next_saga_tick_ = now + (saga_tick_exists_ ? opt_.saga_tick_interval : opt_.purge_interval);
        try {
            if (db_.try_maintenance_lock()) saga_tick_exists_ = db_.saga_tick();
        } catch (const DbLost&) {
            throw;
        } catch (const std::exception& e) {
            spdlog::warn("maintenance: once.saga_tick() failed: {}", e.what());
        }
    }
}

void Relay::log_stats(bool force) {
    auto now = Clock::now();
    if (!force && now < next_stats_) return;
    next_stats_ = now + opt_.stats_interval;
    double secs = std::chrono::duration<double>(now - stats_since_).count();
    if (force || stats_acked_ || stats_nacked_ || stats_dead_)
        spdlog::info("relayed {} messages in {:.0f}s ({:.0f}/s), {} retried, {} dead", stats_acked_, secs,
                     secs > 0 ? stats_acked_ / secs : 0.0, stats_nacked_, stats_dead_);
    stats_acked_ = stats_nacked_ = stats_dead_ = 0;
    stats_since_ = now;
}

void Relay::wait_idle(Clock::time_point until) {
    if (db_.connected() && db_.consume_wakeups()) { need_claim_ = true; return; }
    int64_t timeout = ms_until(until);
    int wd = notifier_.watchdog_tick();
    if (wd >= 0) timeout = std::min<int64_t>(timeout, wd);
    timeout = std::min<int64_t>(timeout, ms_until(next_stats_));
    pollfd fds[2] = {{signals_.fd(), POLLIN, 0}, {db_.connected() ? db_.socket() : -1, POLLIN, 0}};
    int rc = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(timeout, 60000)));
    if (rc < 0 && errno != EINTR) spdlog::warn("poll: {}", std::strerror(errno));
    if (fds[0].revents) poll_signals();
    if (fds[1].revents && db_.connected() && db_.consume_wakeups()) need_claim_ = true;
}

int Relay::run() {
    spdlog::info("once-relay {} starting as \"{}\": sink {}, batch {}, lease {}, max-in-flight {}", ONCE_VERSION, opt_.name,
                 sink_->describe(), opt_.batch, format_duration(opt_.lease), opt_.max_in_flight);
    metrics_.sink_connected = sink_->ready();
    while (true) {
        poll_signals();
        if (stopping_) break;
        if (events_.reload) handle_reload();
        notifier_.watchdog_tick();
        log_stats(false);
        try {
            if (!db_.connected()) {
                if (Clock::now() < reconnect_at_) { wait_idle(reconnect_at_); continue; }
                connect_db();
                if (!db_.connected()) continue;
            }
            flush_pending_acks();
            bool sink_ok = sink_->ready();
            metrics_.sink_connected = sink_ok;
            if (!sink_ok) {
                wait_idle(Clock::now() + std::chrono::milliseconds(200));
                continue;
            }
            maintenance();
            if (need_claim_ || Clock::now() >= next_poll_) {
                next_poll_ = Clock::now() + opt_.poll_interval;
                need_claim_ = run_batch();
                continue;
            }
            auto until = next_poll_;
            if (opt_.maintenance) until = std::min({until, next_purge_, next_saga_tick_});
            wait_idle(until);
        } catch (const DbLost& e) {
            on_db_lost(e.what());
        } catch (const std::exception& e) {
            // The server answered with an error (e.g. permissions): back off like a lost
            // connection rather than spinning.
            spdlog::error("{}", e.what());
            on_db_lost(e.what());
        }
    }
    if (db_.connected()) {
        try { flush_pending_acks(); } catch (const std::exception&) {}
    }
    log_stats(true);
    spdlog::info("stopped");
    return 0;
}

bool Relay::run_batch() {
    std::vector<Message> msgs = db_.claim(opt_.batch, opt_.lease, opt_.topics);
    metrics_.last_claim_unix_ms = unix_ms();
    if (msgs.empty()) return false;
    metrics_.batches++;
    const size_t n = msgs.size();
    const uint64_t base = next_token_;
    next_token_ += n;
    std::vector<Slot> slots(n);
    std::unordered_set<std::string> busy_keys;                     // a publish with this key is in flight
    std::unordered_map<std::string, std::string> failed_keys;     // key -> why its earlier message failed
    std::vector<std::string> delivered;
    delivered.reserve(n);
    size_t done = 0, first_open = 0;
    size_t window = static_cast<size_t>(opt_.max_in_flight);
    auto claimed_at = Clock::now();
    int logged_failures = 0;
    bool db_lost = false;
    std::string db_lost_why;

    auto finish_slot = [&](size_t i) { slots[i].state = Slot::done; ++done; };
    // A failed nack/dead/extend call on a healthy connection (e.g. the message was taken over
    // and acknowledged elsewhere) is logged, not fatal: the lease decides what happens next.
    auto nack = [&](size_t i, const std::string& error, std::optional<Millis> retry_after) {
        if (db_lost) return;   // the lease runs out; someone claims it again
        try {
            std::string verdict = db_.nack(msgs[i].id, error, retry_after);
            if (verdict == "dead") {
                spdlog::warn("dead letter: message {} (topic {}) after {} attempt(s): {}", msgs[i].id, msgs[i].topic,
                             msgs[i].attempt, error);
                metrics_.dead++;
                stats_dead_++;
            } else if (verdict == "stale") {
                spdlog::warn("nack of message {} ignored: its lease was taken over (raise --lease?)", msgs[i].id);
            }
        } catch (const DbLost& e) {
            db_lost = true;
            db_lost_why = e.what();
        } catch (const std::exception& e) {
            spdlog::warn("nack of message {} failed: {}", msgs[i].id, e.what());
        }
    };
    auto apply = [&](std::vector<Outcome>& outs) {
        for (auto& o : outs) {
            if (o.token < base || o.token >= base + n) continue;
            size_t i = static_cast<size_t>(o.token - base);
            if (slots[i].state != Slot::in_flight) continue;
            const Message& m = msgs[i];
            metrics_.publish_latency.observe(std::chrono::duration<double>(Clock::now() - slots[i].started).count());
            if (m.has_key) busy_keys.erase(m.key);
            switch (o.verdict) {
                case Verdict::delivered:
                    delivered.push_back(m.id);
                    break;
                case Verdict::retry:
                    if (logged_failures++ < 5)
                        spdlog::warn("sink error for message {} (topic {}, attempt {}): {}{}", m.id, m.topic, m.attempt, o.error,
                                     o.retry_after ? " (retry after " + format_duration(*o.retry_after) + ")" : std::string());
                    else
                        spdlog::debug("sink error for message {}: {}", m.id, o.error);
                    if (m.has_key) failed_keys.emplace(m.key, o.error);
                    nack(i, o.error, o.retry_after);
                    metrics_.nacked++;
                    stats_nacked_++;
                    break;
                case Verdict::dead:
                    spdlog::warn("sink refused message {} (topic {}) permanently: {}", m.id, m.topic, o.error);
                    if (m.has_key) failed_keys.emplace(m.key, o.error);
                    if (!db_lost) {
                        try {
                            db_.dead(m.id, o.error);
                        } catch (const DbLost& e) {
                            db_lost = true;
                            db_lost_why = e.what();
                        } catch (const std::exception& e) {
                            spdlog::warn("dead-lettering message {} failed: {}", m.id, e.what());
                        }
                    }
                    metrics_.dead++;
                    stats_dead_++;
                    break;
            }
            finish_slot(i);
        }
        outs.clear();
    };
    auto dispatch = [&]() {
        if (stopping_ || db_lost) return;
        while (first_open < n && slots[first_open].state == Slot::done) ++first_open;
        for (size_t i = first_open; i < n && sink_->in_flight() < window; ++i) {
            if (slots[i].state != Slot::waiting) continue;
            const Message& m = msgs[i];
            if (m.has_key) {
                auto f = failed_keys.find(m.key);
                if (f != failed_keys.end()) {
                    // Keep the key's order: an earlier message of this key did not go through.
                    nack(i, "held back: an earlier message with key \"" + m.key + "\" failed: " + f->second, Millis(0));
                    metrics_.nacked++;
                    finish_slot(i);
                    continue;
                }
                if (busy_keys.count(m.key)) continue;
                busy_keys.insert(m.key);
            }
            slots[i].state = Slot::in_flight;
            slots[i].started = Clock::now();
            sink_->submit(base + i, m);
            metrics_.published++;
        }
    };

    std::vector<Outcome> outs;
    std::vector<pollfd> fds;
    Clock::time_point drain_deadline{};
    bool draining = false;
    while (done < n) {
        dispatch();
        metrics_.in_flight = static_cast<int64_t>(sink_->in_flight());
        if (done >= n) break;
        if ((stopping_ || db_lost) && sink_->in_flight() == 0) break;
        if ((stopping_ || db_lost) && !draining) {
            draining = true;
            drain_deadline = stopping_ ? stop_deadline_ : Clock::now() + std::min(opt_.sink_timeout, Millis(5000));
        }
        fds.clear();
        fds.push_back(pollfd{signals_.fd(), POLLIN, 0});
        sink_->poll_fds(fds);
        int64_t timeout = 1000;
        int st = sink_->poll_timeout_ms();
        if (st >= 0) timeout = std::min<int64_t>(timeout, st);
        auto extend_at = claimed_at + opt_.lease / 2;
        timeout = std::min<int64_t>(timeout, ms_until(extend_at));
        if (draining) timeout = std::min<int64_t>(timeout, ms_until(drain_deadline));
        int wd = notifier_.watchdog_tick();
        if (wd >= 0) timeout = std::min<int64_t>(timeout, wd);
        int rc = ::poll(fds.data(), fds.size(), static_cast<int>(timeout));
        if (rc < 0 && errno != EINTR) spdlog::warn("poll: {}", std::strerror(errno));
        if (fds[0].revents) poll_signals();
        sink_->process(fds.data() + 1, fds.size() - 1, outs);
        apply(outs);
        if (draining && Clock::now() >= drain_deadline && sink_->in_flight() > 0) {
            spdlog::warn("giving up on {} publish(es) still in flight", sink_->in_flight());
            sink_->abandon(outs);
            apply(outs);
            break;
        }
        if (!db_lost && done < n && Clock::now() >= claimed_at + opt_.lease / 2) {
            std::vector<std::string> open_ids;
            for (size_t i = first_open; i < n; ++i)
                if (slots[i].state != Slot::done) open_ids.push_back(msgs[i].id);
            try {
                db_.extend(open_ids, opt_.lease);
                spdlog::debug("extended the lease of {} message(s) (sink is slow)", open_ids.size());
            } catch (const DbLost& e) {
                db_lost = true;
                db_lost_why = e.what();
            } catch (const std::exception& e) {
                spdlog::warn("extending leases failed: {}", e.what());
            }
            claimed_at = Clock::now();
        }
    }
    metrics_.in_flight = static_cast<int64_t>(sink_->in_flight());
    if (db_lost) {
        // Keep what the sink confirmed; ack it after the reconnect so it is not sent again.
        pending_acks_.insert(pending_acks_.end(), delivered.begin(), delivered.end());
        throw DbLost(db_lost_why);
    }
    // Messages never handed to the sink because we are stopping: give them back at once.
    for (size_t i = 0; i < n; ++i) {
        if (slots[i].state != Slot::waiting) continue;
        nack(i, "relay stopping before publishing", Millis(0));
        finish_slot(i);
    }
    if (!delivered.empty()) {
        int64_t acked;
        try {
            acked = db_.ack(delivered);
        } catch (const DbLost&) {
            pending_acks_.insert(pending_acks_.end(), delivered.begin(), delivered.end());
            throw;
        }
        metrics_.acked += static_cast<uint64_t>(acked);
        stats_acked_ += static_cast<uint64_t>(acked);
        if (acked < static_cast<int64_t>(delivered.size()))
            spdlog::warn("{} of {} acks refused: their lease expired and another claim took them (raise --lease?)",
                         delivered.size() - acked, delivered.size());
    }
    if (db_lost) throw DbLost(db_lost_why);
    // Claim again at once after any non-empty batch, not only after a full one: an outbox that
    // hands out one message per key per claim returns short batches while a backlog remains.
    // The next empty claim ends the drain.
    return !stopping_;
}

}  // namespace once::relay
