#include "batch.hpp"

#include "sinks/sink.hpp"

namespace once::relay {

Batch::Batch(std::vector<Message> messages, uint64_t first_token, Clock::time_point claimed_at)
    : first_token_(first_token), claimed_at_(claimed_at), lease_from_(claimed_at), waiting_(messages.size()) {
    entries_.reserve(messages.size());
    for (auto& m : messages) {
        Entry e;
        e.msg = std::move(m);
        entries_.push_back(std::move(e));
    }
}

size_t Batch::dispatch(Sink& sink, size_t window, Clock::time_point now) {
    if (stopped_) return 0;
    while (first_waiting_ < entries_.size() && entries_[first_waiting_].state != State::waiting) ++first_waiting_;
    size_t submitted = 0;
    for (size_t i = first_waiting_; i < entries_.size() && sink.in_flight() < window; ++i) {
        Entry& e = entries_[i];
        if (e.state != State::waiting) continue;
        if (e.msg.has_key) {
            // A key's next message waits for the previous one's answer (the window ends the
            // pass, so an earlier waiting message of a key is never skipped for a later one).
            if (!busy_keys_.insert(e.msg.key).second) continue;
        }
        e.state = State::in_flight;
        e.submitted = now;
        --waiting_;
        ++in_flight_;
        ++submitted;
        sink.submit(first_token_ + i, e.msg);
    }
    return submitted;
}

const Batch::Entry* Batch::apply(const Outcome& o) {
    if (!owns(o.token)) return nullptr;
    Entry& e = entries_[static_cast<size_t>(o.token - first_token_)];
    if (e.state != State::in_flight) return nullptr;
    --in_flight_;
    if (e.msg.has_key) busy_keys_.erase(e.msg.key);
    switch (o.verdict) {
        case Verdict::delivered:
            e.state = State::delivered;
            break;
        case Verdict::retry:
            e.state = State::retry;
            e.error = o.error;
            e.retry_after = o.retry_after;
            break;
        case Verdict::dead:
            e.state = State::dead;
            e.error = o.error;
            break;
    }
    if (e.state != State::delivered && e.msg.has_key)
        hold_back_key(e.msg.key, "held back: an earlier message with key \"" + e.msg.key + "\" failed: " + o.error);
    return &e;
}

void Batch::hold_back_key(const std::string& key, const std::string& why) {
    for (size_t i = first_waiting_; i < entries_.size(); ++i) {
        Entry& e = entries_[i];
        if (e.state != State::waiting || !e.msg.has_key || e.msg.key != key) continue;
        e.state = State::held_back;
        e.error = why;
        e.retry_after = Millis(0);   // retry at once: only the failed one waits for its backoff
        --waiting_;
    }
}

void Batch::stop(const std::string& why) {
    stopped_ = true;
    for (size_t i = first_waiting_; i < entries_.size(); ++i) {
        Entry& e = entries_[i];
        if (e.state != State::waiting) continue;
        e.state = State::returned;
        e.error = why;
        e.retry_after = Millis(0);
        --waiting_;
    }
}

void Batch::give_back(const std::string& why) {
    stop(why);
    given_back_ = true;
}

std::optional<Batch::Settlement> Batch::take_settlement() {
    if (!finished() || given_back_ || settlement_taken_) return std::nullopt;
    settlement_taken_ = true;
    return settlement();
}

bool Batch::lease_due(Clock::time_point now, Millis lease) const {
    return !finished() && now >= lease_from_ + lease / 2;
}

std::vector<std::string> Batch::open_ids() const {
    std::vector<std::string> ids;
    for (const Entry& e : entries_)
        if (e.state == State::waiting || e.state == State::in_flight) ids.push_back(e.msg.id);
    return ids;
}

Batch::Settlement Batch::settlement() const {
    Settlement s;
    if (given_back_) return s;   // the database took every message back itself
    for (const Entry& e : entries_) {
        switch (e.state) {
            case State::delivered: s.acks.push_back(e.msg.id); break;
            case State::dead: s.deads.push_back(&e); break;
            case State::retry:
            case State::held_back:
            case State::returned: s.nacks.push_back(&e); break;
            case State::waiting:
            case State::in_flight: break;   // the caller gave up on the batch: the lease returns these
        }
    }
    return s;
}

}  // namespace once::relay
