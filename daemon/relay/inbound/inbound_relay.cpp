#include "inbound/inbound_relay.hpp"

#include "core/backoff.hpp"
#include "credentials.hpp"
#include "inbound/inbound_lanes.hpp"
#include "inbound/inbox_uri.hpp"
#include "inbound/jetstream_consumer.hpp"
#include "outage.hpp"
#include "sinks/postgres_sink.hpp"
#include "uri.hpp"

#include <nats/nats.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <random>
#include <unordered_map>

namespace once::relay {

namespace {

using Clock = std::chrono::steady_clock;

// A failed inbox attempt is tried again after 200ms, 400ms, ... up to 5s (full jitter): the
// inbox counts handler failures (poison after max_attempts); an unreachable database only
// waits.
constexpr BackoffPolicy kRetryPolicy{200, 5000};

std::string trimmed(std::string s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    size_t e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

struct Held {
    natsMsg* msg = nullptr;
    Message message;
};

class InboundRelay {
public:
    InboundRelay(const Options& o, Metrics& metrics, SignalFd& signals, SystemdNotifier& notifier)
        : opt_(o), metrics_(metrics), signals_(signals), notifier_(notifier), rng_(std::random_device{}()) {}
    ~InboundRelay() {
        if (consumer_) consumer_->stop();
        for (auto& [seq, h] : held_) natsMsg_Destroy(h.msg);
    }

    int run();
    // Opens both sides as run() does. With check_only (--check-config) the consumer is only
    // looked up, never created: returns what start would create ("" when nothing).
    std::string open_both(bool check_only = false);

private:
    void take_fetched();
    void submit_ready();
    void apply(std::vector<Outcome>& outcomes);
    void keep_alive();
    void update_gauges();

    const Options& opt_;
    Metrics& metrics_;
    SignalFd& signals_;
    SystemdNotifier& notifier_;
    std::mt19937_64 rng_;
    std::unique_ptr<JetStreamConsumer> consumer_;
    std::unique_ptr<PostgresSink> sink_;
    InboundLanes lanes_;
    std::unordered_map<uint64_t, Held> held_;   // by stream sequence
    std::unordered_map<uint64_t, Clock::time_point> submitted_at_;
    Clock::time_point next_keep_alive_{};
    Outage db_outage_;
};

void InboundRelay::take_fetched() {
    for (auto& f : consumer_->take()) {
        uint64_t seq = f.stream_message.stream_seq;
        if (lanes_.delivered(f.consumer_seq, seq)) {
            ++metrics_.inbound.fences;
            consumer_->set_fenced(true);
            spdlog::warn("inbound: a JetStream delivery did not arrive (consumer sequence skipped to {}); messages after "
                         "stream sequence {} wait until it comes back (AckWait), so no key's messages overtake it",
                         f.consumer_seq, *lanes_.fence());
        }
        Message m = inbound_message(f.stream_message);
        if (!lanes_.add(seq, m.key, m.has_key)) {
            // A redelivery of a message held here: keep the newest delivery's handle (its ack
            // subject is current), drop the other.
            auto& h = held_[seq];
            natsMsg_Destroy(h.msg);
            h.msg = f.msg;
            consumer_->released(1);
            continue;
        }
        held_[seq] = Held{f.msg, std::move(m)};
    }
}

void InboundRelay::submit_ready() {
    if (!sink_->ready()) {
        if (db_outage_.down(Clock::now(), "inbox database unreachable"))
            spdlog::warn("inbound: the inbox database is unreachable; {} message(s) wait, not acknowledged", held_.size());
        metrics_.db_connected = false;
        return;
    }
    metrics_.db_connected = true;
    if (auto d = db_outage_.up(Clock::now()))
        spdlog::info("inbound: the inbox database is back after {}ms",
                     std::chrono::duration_cast<std::chrono::milliseconds>(*d).count());
    size_t limit = static_cast<size_t>(opt_.max_in_flight);
    size_t room = limit > sink_->in_flight() ? limit - sink_->in_flight() : 0;
    if (room == 0) return;
    auto now = Clock::now();
    for (uint64_t seq : lanes_.take_ready(now, room)) {
        submitted_at_[seq] = now;
        sink_->submit(seq, held_[seq].message);
        ++metrics_.published;
    }
}

void InboundRelay::apply(std::vector<Outcome>& outcomes) {
    auto now = Clock::now();
    size_t released = 0;
    for (auto& o : outcomes) {
        uint64_t seq = o.token;
        auto it = held_.find(seq);
        if (it == held_.end()) continue;
        if (auto s = submitted_at_.find(seq); s != submitted_at_.end()) {
            metrics_.publish_latency.observe(std::chrono::duration<double>(now - s->second).count());
            submitted_at_.erase(s);
        }
        if (o.verdict == Verdict::retry) {
            int64_t ms = backoff_delay_ms(kRetryPolicy, std::min(lanes_.failures(seq) + 1, 20),
                                          std::uniform_real_distribution<double>(0.5, 1.0)(rng_));
            int failures = lanes_.retry_at(seq, now + std::chrono::milliseconds(ms));
            ++metrics_.inbound.retries;
            ++metrics_.nacked;
            if (failures == 1 || failures % 20 == 0)
                spdlog::warn("inbound: message {} (stream sequence {}, topic {}): {}; attempt {} failed, trying again in {}ms",
                             it->second.message.id, seq, it->second.message.topic, o.error, failures, ms);
            continue;
        }
        // Settled in the inbox (the transaction committed, or the message is poison there):
        // only now may JetStream forget it.
        consumer_->ack(it->second.msg);
        if (o.verdict == Verdict::dead) {
            ++metrics_.inbound.poison;
            ++metrics_.dead;
            spdlog::warn("inbound: message {} (stream sequence {}, topic {}) is poison in the inbox: kept there with its "
                         "payload for once.inbox_retry; acknowledged so the stream goes on",
                         it->second.message.id, seq, it->second.message.topic);
        } else if (o.duplicate) {
            ++metrics_.inbound.duplicates;
            ++metrics_.acked;
        } else {
            ++metrics_.inbound.delivered;
            ++metrics_.acked;
        }
        natsMsg_Destroy(it->second.msg);
        held_.erase(it);
        lanes_.done(seq);
        ++released;
    }
    if (released) consumer_->released(released);
}

// JetStream redelivers what is not acknowledged within AckWait; a message held here (waiting
// for its key, retrying, in the inbox) is still being worked on: say so, at a third of AckWait.
void InboundRelay::keep_alive() {
    auto now = Clock::now();
    if (now < next_keep_alive_) return;
    next_keep_alive_ = now + consumer_->source().ack_wait / 3;
    for (auto& [seq, h] : held_) consumer_->in_progress(h.msg);
}

void InboundRelay::update_gauges() {
    ConsumerState st = consumer_->last_state();
    metrics_.inbound.consumer_pending = static_cast<int64_t>(st.num_pending);
    metrics_.inbound.consumer_ack_pending = st.ack_pending;
    metrics_.inbound.held = static_cast<int64_t>(held_.size());
    metrics_.in_flight = static_cast<int64_t>(sink_->in_flight());
    metrics_.sink_connected = consumer_->connected();
    bool was_fenced = lanes_.fence().has_value();
    lanes_.ack_floor(st.ack_floor_stream_seq);
    if (was_fenced && !lanes_.fence()) {
        consumer_->set_fenced(false);
        spdlog::info("inbound: earlier deliveries are settled (ack floor {}); new messages go on", st.ack_floor_stream_seq);
    }
}

std::string InboundRelay::open_both(bool check_only) {
    InboundSource src;
    try {
        src = parse_inbound_source(parse_uri(opt_.source));
    } catch (const std::invalid_argument& e) {
        throw SourceError(e.what());
    }
    consumer_ = std::make_unique<JetStreamConsumer>(src, opt_.connect_timeout, opt_.sink_timeout);
    std::string token_file = opt_.nats_token_file;
    if (token_file.empty() && !consumer_->has_credentials())
        if (auto cred = credential_path("nats-token")) token_file = *cred;
    if (!token_file.empty()) {
        if (consumer_->has_credentials()) throw SourceError("--nats-token-file: the --source URL already has a user or token");
        std::string token = trimmed(read_secret_file(token_file, "NATS token"));
        if (token.empty() || token.find_first_of(" \t\r\n") != std::string::npos)
            throw SourceError("the NATS token file \"" + token_file + "\" must hold one token");
        consumer_->set_token(std::move(token));
    }
    std::string db_uri;
    try {
        db_uri = inbox_database_uri(opt_.db);
    } catch (const std::invalid_argument& e) {
        throw SinkError(e.what());
    }
    sink_ = std::make_unique<PostgresSink>(parse_uri(db_uri), src.inbox_source, opt_.sink_timeout, opt_.connect_timeout);
    sink_->open();
    metrics_.db_connected = true;
    if (check_only) return consumer_->check();
    consumer_->open(static_cast<size_t>(opt_.max_in_flight));
    return {};
}

int InboundRelay::run() {
    // A cluster still electing its leaders, or a node restarting, times the first requests
    // out: the relay tries again (backing off up to --reconnect-max) instead of exiting; a
    // wrong configuration (no such stream, a consumer of another kind) still ends it at once.
    for (Millis backoff{250};;) {
        try {
            open_both();
            break;
        } catch (const SourceError& e) {
            if (!e.transient()) throw;
            spdlog::warn("{}; trying again in {}", e.what(), format_duration(backoff));
            consumer_.reset();
            pollfd pfd{signals_.fd(), POLLIN, 0};
            ::poll(&pfd, 1, static_cast<int>(backoff.count()));
            SignalEvents events;
            signals_.read(events);
            if (events.stop) {
                spdlog::info("inbound relay: stopped before the stream could be reached");
                return 0;
            }
            backoff = std::min(backoff * 2, std::max(opt_.reconnect_max, Millis(250)));
        }
    }
    const InboundSource& src = consumer_->source();
    ConsumerState st = consumer_->state();
    // (the first pull waits AckWait, below; every redelivery is due by then, so twice AckWait
    // bounds the gathering even when some never come back)
    lanes_.start(st.delivered_consumer_seq, st.delivered_stream_seq, st.ack_pending, Clock::now(),
                 2 * src.ack_wait + Millis(1000));
    if (lanes_.fence()) {
        ++metrics_.inbound.fences;
        spdlog::info("inbound: {} message(s) delivered earlier are not acknowledged; new messages (after stream sequence {}) "
                     "wait until they come back (AckWait {}ms), so no key's messages overtake them",
                     st.ack_pending, *lanes_.fence(), src.ack_wait.count());
    }
    metrics_.inbound.enabled = true;
    // Messages delivered to an earlier run and not acknowledged come back once AckWait has
    // passed since their last delivery (or progress note), and JetStream then hands out due
    // redeliveries before new messages: so the first pull waits AckWait (plus a margin), and
    // gets them first. The fence keeps anything newer behind them in any case.
    Millis first_fetch_after = lanes_.fence() ? src.ack_wait + Millis(500) : Millis(0);
    consumer_->set_fenced(lanes_.fence().has_value());
    consumer_->start(first_fetch_after);
    spdlog::info("inbound relay: {} (consumer {}) -> inbox source \"{}\" in {}", src.description, src.consumer,
                 src.inbox_source, sink_->describe());
    notifier_.ready();

    SignalEvents events;
    Clock::time_point stop_deadline{};
    bool stopping = false;
    std::vector<Outcome> outcomes;
    for (;;) {
        signals_.read(events);
        if (events.stop && !stopping) {
            stopping = true;
            stop_deadline = Clock::now() + opt_.shutdown_timeout;
            notifier_.stopping();
            spdlog::info("inbound relay: stopping; {} message(s) in the inbox to finish, the rest is redelivered later",
                         sink_->in_flight());
        }
        events.reload = false;   // nothing of the inbound relay is reloadable
        if (stopping && (sink_->in_flight() == 0 || Clock::now() >= stop_deadline)) break;
        take_fetched();
        update_gauges();
        if (!stopping) submit_ready();
        keep_alive();

        std::vector<pollfd> fds;
        fds.push_back(pollfd{signals_.fd(), POLLIN, 0});
        fds.push_back(pollfd{consumer_->event_fd(), POLLIN, 0});
        size_t sink_first = fds.size();
        sink_->poll_fds(fds);
        int timeout = 1000;
        int st_ms = sink_->poll_timeout_ms();
        if (st_ms >= 0) timeout = std::min(timeout, st_ms);
        if (auto r = lanes_.next_retry()) {
            auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*r - Clock::now()).count();
            timeout = std::min<int>(timeout, static_cast<int>(std::max<int64_t>(0, ms) + 1));
        }
        ::poll(fds.data(), fds.size(), timeout);
        outcomes.clear();
        sink_->process(fds.data() + sink_first, fds.size() - sink_first, outcomes);
        apply(outcomes);
    }
    outcomes.clear();
    sink_->abandon(outcomes);
    apply(outcomes);   // retries: not acknowledged, JetStream redelivers them after AckWait
    consumer_->stop();
    // What is still held goes back to JetStream at once (a nak) rather than after AckWait:
    // the next run gets it first, its fence keeps later messages of its key behind it.
    for (auto& [seq, h] : held_) natsMsg_Nak(h.msg, nullptr);
    spdlog::info("inbound relay: stopped ({} delivered, {} duplicate, {} poison)", metrics_.inbound.delivered.load(),
                 metrics_.inbound.duplicates.load(), metrics_.inbound.poison.load());
    return 0;
}

}  // namespace

int run_inbound(const Options& options, Metrics& metrics, SignalFd& signals, SystemdNotifier& notifier) {
    InboundRelay relay(options, metrics, signals, notifier);
    return relay.run();
}

int check_inbound_config(const Options& options) {
    Metrics metrics;
    SignalFd signals;
    SystemdNotifier notifier;
    InboundRelay relay(options, metrics, signals, notifier);
    std::string note = relay.open_both(true);
    if (!note.empty()) std::printf("once-relay: %s\n", note.c_str());
    std::printf("once-relay: configuration OK (inbound: source %s, inbox database %s)\n",
                redact_uri(options.source).c_str(), redact_conninfo(options.db).c_str());
    return 0;
}

}  // namespace once::relay
