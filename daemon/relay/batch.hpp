// One claimed batch on its way through the sink. Every message has an explicit state:
//
//   waiting --dispatch--> in_flight --apply--> delivered | retry | dead
//   waiting --a failed earlier message of its key--> held_back
//   waiting --stop (SIGTERM, database lost)--> returned
//
// and the batch as a whole is open -> settling (its settlement was taken, once) or
// open -> given_back (locked mode: its transaction rolled back, so the database has every
// message back untouched and nothing may be acked or nacked any more).
//
// The batch decides what to hand to the sink next (a key's messages one at a time and in
// order, keyless ones freely, bounded by the sink's window), records the sink's answers in
// whatever order they come, says when the lease needs extending, and at the end says what to
// tell the outbox (settlement). It talks to the sink but never to the database: the relay
// carries out the settlement, so this type is unit-tested against a fake sink.
#pragma once

#include "duration.hpp"
#include "message.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace once::relay {

class Sink;

class Batch {
public:
    using Clock = std::chrono::steady_clock;
    enum class State { waiting, in_flight, delivered, retry, dead, held_back, returned };

    struct Entry {
        Message msg;
        State state = State::waiting;
        Clock::time_point submitted{};
        std::string error;                  // retry / dead / held_back / returned: why
        std::optional<Millis> retry_after;  // retry: the sink asked to wait this long
    };

    // What to tell the outbox once the batch is over (pointers into this batch).
    struct Settlement {
        std::vector<std::string> acks;      // delivered
        std::vector<const Entry*> nacks;    // retry, held_back, returned: once.nack
        std::vector<const Entry*> deads;    // the sink refused for good: once.dead
    };

    // `first_token` numbers the messages for Sink::submit (first_token + index).
    Batch(std::vector<Message> messages, uint64_t first_token, Clock::time_point claimed_at);

    // Hands waiting messages to the sink while it has fewer than `window` publishes in
    // flight. Returns how many were submitted. Nothing is submitted after stop().
    size_t dispatch(Sink& sink, size_t window, Clock::time_point now);

    // Records the sink's answer for one of this batch's tokens (in any order). Returns the
    // answered message, or nullptr when the token is not this batch's or was already
    // answered. A failure holds back the later messages of its key that are still waiting:
    // publishing them would overtake the failed one.
    const Entry* apply(const Outcome& outcome);

    // No more publishing: whatever is still waiting is given back to the outbox (`why`).
    // Publishes in flight still get their answers (or are abandoned by the caller).
    void stop(const std::string& why);

    // Locked mode: the batch's transaction rolled back (lost connection, failed COMMIT,
    // shutdown bound): the outbox has every message back as it was. Nothing more is
    // published; answers still coming are recorded but the settlement is empty for good.
    void give_back(const std::string& why);
    bool given_back() const { return given_back_; }

    // The settlement, exactly once: when finished(), not given back and not taken before.
    // (Settling twice would ack/nack twice; locked mode settles and COMMITs in one flight.)
    std::optional<Settlement> take_settlement();

    // Leases: due at half the lease after the claim or the last extension, while messages
    // are unsettled. The relay extends the ids of open_ids() and calls lease_extended().
    bool lease_due(Clock::time_point now, Millis lease) const;
    std::vector<std::string> open_ids() const;
    void lease_extended(Clock::time_point now) { lease_from_ = now; }

    Clock::time_point claimed_at() const { return claimed_at_; }
    bool owns(uint64_t token) const { return token >= first_token_ && token < first_token_ + entries_.size(); }
    bool all_dispatched() const { return waiting_ == 0; }   // nothing left to hand to the sink
    bool finished() const { return waiting_ == 0 && in_flight_ == 0; }
    size_t in_flight() const { return in_flight_; }
    size_t size() const { return entries_.size(); }
    const Entry& entry(size_t i) const { return entries_[i]; }
    uint64_t end_token() const { return first_token_ + entries_.size(); }

    // Only meaningful once finished(): every message ends in exactly one list. Empty once
    // given back.
    Settlement settlement() const;

private:
    void hold_back_key(const std::string& key, const std::string& why);

    std::vector<Entry> entries_;
    uint64_t first_token_;
    Clock::time_point claimed_at_;
    Clock::time_point lease_from_;
    size_t waiting_;
    size_t in_flight_ = 0;
    size_t first_waiting_ = 0;                                   // no waiting entry before this index
    bool stopped_ = false;
    bool given_back_ = false;
    bool settlement_taken_ = false;
    std::unordered_set<std::string> busy_keys_;                  // a publish with this key is in flight
};

}  // namespace once::relay
