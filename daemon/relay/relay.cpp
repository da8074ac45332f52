#include "relay.hpp"

#include "core/backoff.hpp"
#include "outbox/locked_hold_bound.hpp"
#include "outbox/session_check.hpp"
#include "wal/pg_wal_store.hpp"
#include "wal/replication_stream.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace once::relay {

Millis reconnect_delay(int failures, Millis cap, double u) {
    BackoffPolicy p{100, std::max<int64_t>(100, cap.count())};
    return Millis(backoff_delay_ms(p, std::max(1, std::min(failures, 30)), u));
}

Relay::Wiring Relay::libpq_wiring(const Options& o) {
    Wiring w;
    w.db = std::make_unique<SourceDb>(o.db, o.name, o.connect_timeout, o.synchronous_commit);
    w.leased_claim_connection = [o] {
        return std::make_unique<PgLockedTx>(o.db, o.name, o.connect_timeout, o.synchronous_commit);
    };
    // The lanes' sessions end a transaction idle past the hold bound, so both limits are taken
    // from the same settings, once (a reload keeps them; see locked_publish_limit below).
    w.locked_tx = [o]() -> std::unique_ptr<LockedTx> {
        return std::make_unique<PgLockedTx>(o.db, o.name, o.connect_timeout, o.synchronous_commit,
                                            locked_session_settings(locked_hold_bound(o.lease, o.sink_timeout)));
    };
    if (o.transport == "wal") {
        wal::ReplicationStreamOptions r;
        r.conninfo = o.db;
        r.slot = o.wal_slot;
        r.publication = o.wal_publication;
        r.application_name = o.name + " wal";
        r.connect_timeout = o.connect_timeout;
        w.wal_reader = std::make_unique<wal::ReplicationStream>(r);
        w.wal_store = std::make_unique<PgWalStore>(o.db, o.name, o.connect_timeout, o.wal_slot);
    }
    return w;
}

Relay::Relay(Options options, Reloader reloader, std::unique_ptr<Sink> sink, Metrics& metrics, SignalFd& signals,
             SystemdNotifier& notifier)
    : Relay(options, std::move(reloader), std::move(sink), metrics, signals, notifier, libpq_wiring(options)) {}

Relay::Relay(Options options, Reloader reloader, std::unique_ptr<Sink> sink, Metrics& metrics, SignalFd& signals,
             SystemdNotifier& notifier, Wiring wiring)
    : opt_(std::move(options)), reloader_(std::move(reloader)), sink_(std::move(sink)), metrics_(metrics),
      signals_(signals), notifier_(notifier), db_(std::move(wiring.db)), wiring_(std::move(wiring)),
      rng_(std::random_device{}()) {
    TableClaims::Config table;
    table.mode = resolve_claim_mode(opt_.claim_mode, sink_->preferred_claim_mode());
    table.leased_claim_connection = wiring_.leased_claim_connection;
    table.locked_tx = wiring_.locked_tx;
    table.locked_publish_limit = locked_publish_limit(opt_.lease);
    table_ = std::make_unique<TableClaims>(*db_, metrics_, std::move(table));
    if (wiring_.wal_reader)
        wal_ = std::make_unique<WalStream>(std::move(wiring_.wal_reader), std::move(wiring_.wal_store), metrics_, opt_.reconnect_max,
                                            opt_.topics, opt_.wal_accept_slot_loss_on_failover);
    auto now = Clock::now();
    next_purge_ = now;
    next_saga_tick_ = now;
    next_stats_ = now + opt_.stats_interval;
    stats_since_ = now;
    stats_from_ = metrics_.snapshot();
}

int64_t Relay::ms_until(Clock::time_point t) const {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
    return std::max<int64_t>(0, ms);
}

// ------------------------------------------------------------------------------ lifecycle

int Relay::run() {
    spdlog::info("once-relay {} starting as \"{}\": sink {}, claim mode {}{}, batch {}, lease {}, max-in-flight {}", ONCE_VERSION,
                 opt_.name, sink_->describe(), claim_mode_name(table_->mode()), opt_.claim_mode == "auto" ? " (auto)" : "", opt_.batch,
                 format_duration(opt_.lease), opt_.max_in_flight);
    if (wal_)
        spdlog::info("transport wal: streaming slot {} (publication {}) beside the outbox table", opt_.wal_slot,
                     opt_.wal_publication);
    sink_health(sink_->ready());
    while (true) {
        poll_signals();
        if (stopping_ && open_count() == 0) break;
        if (events_.reload) handle_reload();
        notifier_.watchdog_tick();
        log_stats(false);
        try {
            step();
        } catch (const SessionRequired&) {
            throw;   // a transaction pool: main() stops with the reason (outbox/session_check.hpp)
        } catch (const DbLost& e) {
            on_db_lost(e.what());
        } catch (const std::exception& e) {
            // The server answered with an error (e.g. permissions): back off like a lost
            // connection rather than spinning.
            spdlog::error("{}", e.what());
            on_db_lost(e.what());
        }
    }
    if (db_->connected()) {   // (leased acks kept while the database was away)
        try { table_->flush_pending_acks(); } catch (const std::exception&) {}
    }
    if (wal_) wal_->close();   // (the last status update carries the confirmed position)
    log_stats(true);
    spdlog::info("stopped");
    return 0;
}

void Relay::step() {
    if (!db_->connected() && table_->open_count() == 0 && Clock::now() >= reconnect_at_) connect_db();
    for (ClaimSource* s : sources()) s->pump(Clock::now());
    for (ClaimSource* s : sources()) open_answers(*s);
    // Settled before claiming: a key's next message is claimable only once its previous one
    // is settled. (With the database away, leased acks are kept for after the reconnect;
    // locked batches settle on their own connections, the stream's by acks and write-backs.)
    for (ClaimSource* s : sources())
        s->settle_finished([this, s](const SettleOutcome& o) { on_settled(*s, o); });
    if (db_->connected()) {
        maintenance();
        sink_health(sink_->ready());
    }
    claim_from_each();
    for (ClaimSource* s : sources()) s->keep_claims(Clock::now());
    dispatch();
    // The batch just handed to the sink lets the next claim go out now, before the loop waits:
    // the server runs that claim meanwhile.
    claim_from_each();
    wait_and_process();
}

std::vector<Batch*> Relay::open_batches() {
    std::vector<Batch*> out;
    for (ClaimSource* s : sources()) s->open_batches(out);
    // oldest first (from every source): tokens grow with every claim
    std::sort(out.begin(), out.end(), [](const Batch* a, const Batch* b) { return a->end_token() < b->end_token(); });
    return out;
}

size_t Relay::open_count() const {   // (a claim still out counts: its answer may hold messages)
    size_t n = 0;
    for (const ClaimSource* s : sources()) n += s->open_count();
    return n;
}

std::vector<ClaimSource*> Relay::sources() const {
    std::vector<ClaimSource*> out{table_.get()};
    if (wal_) out.push_back(wal_.get());
    return out;
}

void Relay::want_claim() {
    for (ClaimSource* s : sources()) s->wake();
}

bool Relay::may_claim(const ClaimSource& source) const { return !stopping_ && sink_ready_ && source.may_claim(); }

void Relay::claim_from_each() {
    for (ClaimSource* s : sources())
        if (may_claim(*s)) s->start_claim(ClaimRequest{opt_.batch, opt_.lease, opt_.topics, 0, opt_.poll_interval});   // DbLost: run() backs off
}

void Relay::open_answers(ClaimSource& source) {
    for (ClaimAnswer& a : source.collect_claims()) {   // DbLost / server error: run() backs off
        if (a.messages.empty()) continue;
        // Claimed while SIGTERM or a lost database arrived: publish none of it, give it all back.
        const char* refused = stopping_ ? "relay stopping" : a.refused;
        if (refused && source.give_back_unopened(a.lane, a.messages)) continue;   // (locked: rolled back untouched)
        metrics_.batches++;
        failures_logged_ = 0;
        uint64_t first = next_token_;
        next_token_ += a.messages.size();
        Batch batch(std::move(a.messages), first, Clock::now());
        if (refused) batch.stop(refused);   // (leased: nacked at once when settled)
        source.open_batch(a.lane, std::move(batch));
    }
}

void Relay::dispatch() {
    auto window = static_cast<size_t>(opt_.max_in_flight);
    auto now = Clock::now();
    for (Batch* b : open_batches()) metrics_.published += b->dispatch(*sink_, window, now);
    metrics_.in_flight = static_cast<int64_t>(sink_->in_flight());
}

void Relay::wait_and_process() {
    // Wake-ups that arrived during the last call are already in libpq's queue, not on the socket.
    if (db_->connected() && db_->consume_wakeups()) want_claim();
    bool draining = open_count() > 0 && (stopping_ || !db_->connected());
    int64_t timeout = 60000;
    for (const ClaimSource* s : sources()) {
        if (may_claim(*s)) timeout = 0;
        std::optional<Clock::time_point> due = s->claim_due();
        if (due && !stopping_) timeout = std::min<int64_t>(timeout, ms_until(*due));
    }
    if (wal_ && !wal_->is_open() && !stopping_) timeout = std::min<int64_t>(timeout, 100);   // (its reopen timer)
    int st = sink_->poll_timeout_ms();
    if (st >= 0) timeout = std::min<int64_t>(timeout, st);
    if (open_count() > 0) {
        timeout = std::min<int64_t>(timeout, 1000);
        for (const ClaimSource* s : sources())
            if (s->settlement_due()) timeout = 0;
    }
    if (db_->connected()) {
        if (!sink_ready_) timeout = std::min<int64_t>(timeout, 200);   // ask the sink again
        if (opt_.maintenance) timeout = std::min<int64_t>(timeout, ms_until(std::min(next_purge_, next_saga_tick_)));
    } else if (table_->open_count() == 0) {
        timeout = std::min<int64_t>(timeout, ms_until(reconnect_at_));
    }
    if (draining) timeout = std::min<int64_t>(timeout, ms_until(drain_deadline_));
    if (stopping_ && open_count() == 0) timeout = 0;   // the last batch settled in this step: exit now
    int wd = notifier_.watchdog_tick();
    if (wd >= 0) timeout = std::min<int64_t>(timeout, wd);
    timeout = std::min<int64_t>(timeout, ms_until(next_stats_));

    std::vector<pollfd> fds;
    fds.push_back(pollfd{signals_.fd(), POLLIN, 0});
    fds.push_back(pollfd{db_->connected() ? db_->socket() : -1, POLLIN, 0});
    sink_->poll_fds(fds);
    size_t sink_fds = fds.size() - 2;
    for (const ClaimSource* s : sources()) s->poll_fds(fds);   // claims and settlements out: their answers
    int rc = ::poll(fds.data(), fds.size(), static_cast<int>(timeout));
    if (rc < 0 && errno != EINTR) spdlog::warn("poll: {}", std::strerror(errno));
    if (fds[0].revents) poll_signals();

    sink_->process(fds.data() + 2, sink_fds, outcomes_);
    apply(outcomes_);
    metrics_.in_flight = static_cast<int64_t>(sink_->in_flight());
    drain_deadline_check();
    if (fds[1].revents && db_->connected() && db_->consume_wakeups()) want_claim();
}

void Relay::apply(std::vector<Outcome>& outcomes) {
    auto now = Clock::now();
    auto open = open_batches();
    for (const Outcome& o : outcomes) {
        for (Batch* b : open) {
            if (!b->owns(o.token)) continue;
            const Batch::Entry* e = b->apply(o);
            if (!e) break;
            metrics_.publish_latency.observe(std::chrono::duration<double>(now - e->submitted).count());
            const Message& m = e->msg;
            if (e->state == Batch::State::delivered) delivered_since_down_ = true;
            if (e->state == Batch::State::retry) {
                last_sink_error_ = e->error;
                last_sink_error_at_ = now;
                sink_outage_.count();
                // During an outage its start was logged, with the reason: the failures that
                // follow are counted and told when it ends.
                if (!sink_outage_.active() && failures_logged_++ < 5)
                    spdlog::warn("sink error for message {} (topic {}, attempt {}): {}{}", m.id, m.topic, m.attempt, e->error,
                                 e->retry_after ? " (retry after " + format_duration(*e->retry_after) + ")" : std::string());
                else
                    spdlog::debug("sink error for message {}: {}", m.id, e->error);
            } else if (e->state == Batch::State::dead) {
                spdlog::warn("sink refused message {} (topic {}) permanently: {}", m.id, m.topic, e->error);
            }
            break;
        }
    }
    outcomes.clear();
}

void Relay::stop_batches(const std::string& why, Clock::time_point deadline) {
    for (ClaimSource* s : sources()) s->stop(why);   // (locked batches go on: they commit or roll back whole)
    drain_deadline_ = deadline;
}

void Relay::drain_deadline_check() {
    bool draining = stopping_ || !db_->connected();
    if (draining && Clock::now() >= drain_deadline_) {
        // Locked batches not committed by the bound are rolled back: every message goes back
        // untouched, nothing is counted as an attempt. A leased claim still out is dropped: its
        // leases, if it took any, run out.
        size_t n = 0;
        for (ClaimSource* s : sources()) n += s->abandon("not finished within the drain bound");
        metrics_.given_back += n;
        if (n) spdlog::warn("rolled back {} message(s) not settled within the drain bound; the outbox has them back", n);
    }
    if (!draining || sink_->in_flight() == 0 || Clock::now() < drain_deadline_) return;
    spdlog::warn("giving up on {} publish(es) still in flight", sink_->in_flight());
    std::vector<Outcome> outcomes;
    sink_->abandon(outcomes);
    apply(outcomes);
}

// ------------------------------------------------------------------------------ settling

void Relay::on_settled(const ClaimSource& source, const SettleOutcome& o) {
    if (!o.given_back) return;
    metrics_.given_back += o.batch_size;
    spdlog::warn("batch of {} message(s) given back, the outbox has them all again: {}", o.batch_size, o.error);
    // Reconnect everything with backoff. A failure on a healthy connection backs off the
    // same way: the messages are back untouched, and claiming them again at once could
    // repeat the failure in a tight loop that never counts an attempt.
    // (A locked batch given back on a healthy connection: the table leases for a while.)
    if (o.connection_lost) throw DbLost(o.error);
    throw std::runtime_error(std::string("settling a ") + claim_mode_name(source.mode()) + " batch failed: " + o.error);
}

// ------------------------------------------------------------------------------ database

void Relay::connect_db() {
    std::optional<WaitingCount> waiting;   // for the line that ends an outage
    try {
        db_->connect();
        table_->connect();
        if (db_outage_.active()) waiting = db_->waiting_messages(wal_ ? opt_.wal_slot : std::string());
    } catch (const SessionRequired&) {
        throw;
    } catch (const std::exception& e) {
        on_db_lost(e.what());
        return;
    }
    metrics_.db_connected = true;
    if (ever_connected_) metrics_.reconnects++;
    if (!ever_connected_)
        spdlog::info("connected to {} ({}), listening on {}", db_->server(), db_->redacted_conninfo(), kWakeChannel);
    if (db_outage_.active()) {
        uint64_t failures = db_outage_.failures();
        std::string reason = db_outage_.reason();
        auto lasted = db_outage_.up(Clock::now());
        spdlog::info("{} to {}: database back {}", ever_connected_ ? "reconnected" : "connected", db_->server(),
                     outage_end_text(*lasted, reason, failures, waiting));
    }
    ever_connected_ = true;
    connect_failures_ = 0;
    want_claim();   // whatever was sent while we were away
    if (!ready_sent_) { notifier_.ready(); ready_sent_ = true; }
}

void Relay::on_db_lost(const std::string& why) {
    metrics_.db_connected = false;
    db_->disconnect();
    // Locked batches: closing their connections rolls them back, so the outbox has every
    // message back at once; publishes still in flight are orphaned (their answers match no
    // batch; a duplicate they cause is dropped by the sink's dedupe).
    // A leased claim still out: if it committed, its leases run out and the messages come back.
    size_t returned = 0;
    for (ClaimSource* s : sources()) returned += s->database_lost("database connection lost");
    metrics_.given_back += returned;
    if (returned) spdlog::warn("{} claimed message(s) given back with their transactions", returned);
    ++connect_failures_;
    double u = std::uniform_real_distribution<double>(0.5, 1.0)(rng_);
    int64_t delay = reconnect_delay(connect_failures_, opt_.reconnect_max, u).count();
    reconnect_at_ = Clock::now() + std::chrono::milliseconds(delay);
    // Once per outage: its end is logged too, with how long it lasted (connect_db).
    if (!db_outage_.active() && db_outage_.down(Clock::now(), why))
        spdlog::warn("database down: {} (retrying with backoff up to {}; logged again when it is back)", why,
                     format_duration(opt_.reconnect_max));
    else {
        db_outage_.count();
        spdlog::debug("database unavailable: {} (retry in {}ms)", why, delay);
    }
    // Publish nothing more of the open batches; wait a little for what is in flight so its
    // acks are kept for after the reconnect.
    if (open_count() > 0 && !stopping_)   // (the locked ones were given back above)
        stop_batches("database connection lost", Clock::now() + std::min(opt_.sink_timeout, Millis(5000)));
}

// One relay at a time runs the timers. The others say once, after ten saga-tick intervals
// without the lock, who has it, so that timers that never run (a relay that hangs with the
// lock) are visible in every relay's log; and again when this relay takes over.
bool Relay::maintenance_lock_held(Clock::time_point now) {
    if (db_->try_maintenance_lock()) {
        if (maintenance_denied_logged_) spdlog::info("maintenance: this relay now runs saga_tick and purge");
        maintenance_denied_since_.reset();
        maintenance_denied_logged_ = false;
        return true;
    }
    if (!maintenance_denied_since_) maintenance_denied_since_ = now;
    const auto waited = now - *maintenance_denied_since_;
    if (!maintenance_denied_logged_ && waited >= 10 * opt_.saga_tick_interval) {
        spdlog::info("maintenance: another session has held the timer lock for {} s, so this relay does not run "
                     "saga_tick or purge (pg_locks: locktype 'advisory', classid 1835955246, objsubid 28526)",
                     std::chrono::duration_cast<std::chrono::seconds>(waited).count());
        maintenance_denied_logged_ = true;
    }
    return false;
}

void Relay::maintenance() {
    if (!opt_.maintenance) return;
    auto now = Clock::now();
    if (now >= next_purge_) {
        next_purge_ = now + opt_.purge_interval;
        try {
            if (maintenance_lock_held(now)) {
                int64_t n = db_->purge();
                if (n > 0) spdlog::info("maintenance: once.purge() removed {} rows", n);
            }
        } catch (const DbLost&) {
            throw;
        } catch (const std::exception& e) {
            spdlog::warn("maintenance: once.purge() failed: {}", e.what());
        }
    }
    if (now >= next_saga_tick_) {
        next_saga_tick_ = now + opt_.saga_tick_interval;
        try {
            if (maintenance_lock_held(now)) db_->saga_tick();
        } catch (const DbLost&) {
            throw;
        } catch (const std::exception& e) {
            spdlog::warn("maintenance: once.saga_tick() failed: {}", e.what());
        }
    }
}

// ------------------------------------------------------------------------------ signals, logs

void Relay::poll_signals() {
    signals_.read(events_);
    if (events_.stop && !stopping_) {
        stopping_ = true;
        stop_deadline_ = Clock::now() + opt_.shutdown_timeout;
        // Leased batches hand back what was not published yet. Locked batches are finished
        // (published, settled, committed) within the bound, else rolled back.
        if (wal_) wal_->shutdown();
        stop_batches("relay stopping before publishing", stop_deadline_);
        notifier_.stopping();
        spdlog::info("stopping: finishing in-flight work (at most {})", format_duration(opt_.shutdown_timeout));
    }
}

void Relay::handle_reload() {
    events_.reload = false;
    notifier_.reloading();
    try {
        Options fresh = reloader_();
        auto restart = keep_restart_only(opt_, fresh);
        if (!restart.empty()) {
            std::string list;
            for (auto& s : restart) list += (list.empty() ? "" : ", ") + s;
            spdlog::warn("reload: {} changed but only take(s) effect after a restart; keeping the running value(s)", list);
        }
        opt_ = fresh;
        if (wal_) wal_->set_topics(opt_.topics);
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

void Relay::sink_health(bool ready) {
    sink_ready_ = ready;
    metrics_.sink_connected = ready;
    auto now = Clock::now();
    if (!ready) {
        // The reason: the latest failed publish if it is recent, else the sink's own state.
        std::string reason = !last_sink_error_.empty() && now - last_sink_error_at_ < std::chrono::seconds(10)
                                 ? last_sink_error_
                                 : std::string(sink_->kind()) + " sink not connected";
        if (sink_outage_.down(now, reason))
            spdlog::warn("sink down: {} ({}); claims pause while it is down, logged again when it is back", reason,
                         sink_->describe());
        delivered_since_down_ = false;
        return;
    }
    if (!sink_outage_.active()) return;
    // HTTP: ready() only paused claims; a delivery shows the receiver is back.
    if (!sink_->ready_tracks_connection() && !delivered_since_down_) return;
    std::optional<WaitingCount> waiting;
    // (the WAL transport's messages wait in its slot; DbLost: the loop reconnects)
    if (db_->connected()) waiting = db_->waiting_messages(wal_ ? opt_.wal_slot : std::string());
    uint64_t failures = sink_outage_.failures();
    std::string reason = sink_outage_.reason();
    auto lasted = sink_outage_.up(now);
    spdlog::info("sink healed {}", outage_end_text(*lasted, reason, failures, waiting));
}

void Relay::log_stats(bool force) {
    auto now = Clock::now();
    if (!force && now < next_stats_) return;
    next_stats_ = now + opt_.stats_interval;
    MetricsSnapshot at = metrics_.snapshot();
    uint64_t acked = at.acked - stats_from_.acked, nacked = at.nacked - stats_from_.nacked, dead = at.dead - stats_from_.dead;
    double secs = std::chrono::duration<double>(now - stats_since_).count();
    if (force || acked || nacked || dead)
        spdlog::info("relayed {} messages in {:.0f}s ({:.0f}/s), {} retried, {} dead", acked, secs,
                     secs > 0 ? acked / secs : 0.0, nacked, dead);
    stats_from_ = at;
    stats_since_ = now;
}

}  // namespace once::relay
