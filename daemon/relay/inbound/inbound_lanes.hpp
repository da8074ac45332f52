// Which fetched JetStream messages may go to the inbox now: per-key order, retries, and the
// fence that keeps a redelivered message from being overtaken. Pure logic (the inbound
// relay's loop feeds it stream sequences; tests/unit/daemon/inbound_lanes_test.cpp).
//
//  * Lanes by key: of the messages held for one key, only the oldest (lowest stream
//    sequence) may be in the inbox at a time; the next one goes after it was settled
//    (processed, duplicate or poison). A message that must be retried (handler failed,
//    no handler yet) stays at the head of its lane until its retry time, so a later message
//    of its key cannot overtake it. Messages without a key go as soon as they are held.
//    Different keys never wait for each other.
//  * The fence: a message JetStream delivered to this relay and that never arrived (the
//    relay was killed holding it, or a pull response was lost on a broken connection) comes
//    back only after AckWait, later than newer messages of its key. So at start, when the
//    consumer has unacknowledged deliveries, and whenever the consumer's delivery sequence
//    skips a number, messages above the highest stream sequence delivered so far wait (in
//    memory, counted in flight) until the consumer's ack floor reaches it: by then every
//    earlier message was redelivered and settled. Messages at or below the fence go on, in
//    stream order: JetStream redelivers them in the order their AckWait ran out, which is not
//    stream order (a message the killed run kept alive with progress notes comes back after
//    a later message of its key). So at start the redeliveries are gathered first: none of
//    them goes until as many as the consumer had unacknowledged have come back, or until a
//    bound (twice AckWait) has passed, and then each lane takes its lowest sequence first.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace once::relay {

class InboundLanes {
public:
    using Clock = std::chrono::steady_clock;

    // A delivered message. False when it is held already (a redelivery of a message this
    // relay still holds: keep one copy).
    bool add(uint64_t stream_seq, const std::string& key, bool has_key);
    // Messages that may go to the inbox now, oldest first, at most `limit`; each is marked
    // in flight.
    std::vector<uint64_t> take_ready(Clock::time_point now, size_t limit);
    // Settled for good (processed, duplicate, poison): the message leaves its lane.
    void done(uint64_t stream_seq);
    // Not settled: it goes again at `at`, still ahead of its key's later messages. Returns
    // how many times it failed so far.
    int retry_at(uint64_t stream_seq, Clock::time_point at);
    // In flight messages given back without an answer (the database was lost): due now.
    void give_back_all_in_flight();

    // The consumer's delivery sequence of the message just added; a skipped number fences
    // at the highest stream sequence delivered so far. `stream_seq` is its stream sequence.
    // Returns true when this raised the fence.
    bool delivered(uint64_t consumer_seq, uint64_t stream_seq);
    // At start: the consumer's state (delivered sequences, unacknowledged count).
    // With `gather_for` (> 0), the redeliveries are gathered until all `ack_pending` are back
    // or `now + gather_for` has passed.
    void start(uint64_t delivered_consumer_seq, uint64_t delivered_stream_seq, int64_t ack_pending,
               Clock::time_point now = {}, Clock::duration gather_for = {});
    // Redeliveries still awaited before those at or below the fence may go (0: none).
    int64_t awaited_redeliveries() const { return awaiting_; }
    // The consumer's ack floor (stream sequence): lifts the fence once it reaches it.
    void ack_floor(uint64_t stream_seq);
    std::optional<uint64_t> fence() const { return fence_; }

    size_t held() const { return entries_.size(); }
    size_t in_flight() const { return in_flight_; }
    bool holds(uint64_t stream_seq) const { return entries_.count(stream_seq) > 0; }
    int failures(uint64_t stream_seq) const {
        auto it = entries_.find(stream_seq);
        return it == entries_.end() ? 0 : it->second.failures;
    }
    // The earliest retry time of a held message that is not in flight (for the poll timeout).
    std::optional<Clock::time_point> next_retry() const;

private:
    struct Entry {
        std::string key;
        bool has_key = false;
        bool in_flight = false;
        int failures = 0;
        Clock::time_point not_before{};
    };
    bool fenced_out(uint64_t seq) const { return fence_ && seq > *fence_; }
    bool gathering(uint64_t seq, Clock::time_point now) const {
        return awaiting_ > 0 && now < gather_until_ && fence_ && seq <= *fence_;
    }

    std::map<uint64_t, Entry> entries_;                      // by stream sequence
    std::map<std::string, std::set<uint64_t>> lanes_;        // key -> its held sequences
    size_t in_flight_ = 0;
    uint64_t last_consumer_seq_ = 0;
    uint64_t max_stream_seq_ = 0;
    std::optional<uint64_t> fence_;
    int64_t awaiting_ = 0;                 // redeliveries not back yet (start's ack_pending)
    Clock::time_point gather_until_{};
};

}  // namespace once::relay
