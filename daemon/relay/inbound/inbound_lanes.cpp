#include "inbound/inbound_lanes.hpp"

#include <algorithm>

namespace once::relay {

bool InboundLanes::add(uint64_t seq, const std::string& key, bool has_key) {
    if (entries_.count(seq)) return false;
    Entry e;
    e.key = key;
    e.has_key = has_key;
    entries_.emplace(seq, std::move(e));
    if (has_key) lanes_[key].insert(seq);
    if (awaiting_ > 0 && fence_ && seq <= *fence_) --awaiting_;
    return true;
}

std::vector<uint64_t> InboundLanes::take_ready(Clock::time_point now, size_t limit) {
    std::vector<uint64_t> out;
    for (auto& [seq, e] : entries_) {
        if (out.size() >= limit) break;
        if (e.in_flight || e.not_before > now || fenced_out(seq) || gathering(seq, now)) continue;
        if (e.has_key && *lanes_[e.key].begin() != seq) continue;   // an older one of its key first
        e.in_flight = true;
        ++in_flight_;
        out.push_back(seq);
    }
    return out;
}

void InboundLanes::done(uint64_t seq) {
    auto it = entries_.find(seq);
    if (it == entries_.end()) return;
    if (it->second.in_flight) --in_flight_;
    if (it->second.has_key) {
        auto lane = lanes_.find(it->second.key);
        lane->second.erase(seq);
        if (lane->second.empty()) lanes_.erase(lane);
    }
    entries_.erase(it);
}

int InboundLanes::retry_at(uint64_t seq, Clock::time_point at) {
    auto it = entries_.find(seq);
    if (it == entries_.end()) return 0;
    if (it->second.in_flight) { it->second.in_flight = false; --in_flight_; }
    it->second.not_before = at;
    return ++it->second.failures;
}

void InboundLanes::give_back_all_in_flight() {
    for (auto& [seq, e] : entries_) e.in_flight = false;
    in_flight_ = 0;
}

bool InboundLanes::delivered(uint64_t consumer_seq, uint64_t stream_seq) {
    bool gap = last_consumer_seq_ != 0 && consumer_seq > last_consumer_seq_ + 1;
    bool raised = false;
    if (gap) {
        uint64_t f = std::max(max_stream_seq_, stream_seq > 0 ? stream_seq - 1 : 0);
        if (!fence_ || *fence_ < f) { fence_ = f; raised = true; }
    }
    last_consumer_seq_ = consumer_seq;
    max_stream_seq_ = std::max(max_stream_seq_, stream_seq);
    return raised;
}

void InboundLanes::start(uint64_t delivered_consumer_seq, uint64_t delivered_stream_seq, int64_t ack_pending,
                         Clock::time_point now, Clock::duration gather_for) {
    last_consumer_seq_ = delivered_consumer_seq;
    max_stream_seq_ = std::max(max_stream_seq_, delivered_stream_seq);
    if (ack_pending > 0 && (!fence_ || *fence_ < delivered_stream_seq)) fence_ = delivered_stream_seq;
    if (ack_pending > 0 && gather_for > Clock::duration::zero()) {
        awaiting_ = ack_pending;
        gather_until_ = now + gather_for;
    }
}

void InboundLanes::ack_floor(uint64_t seq) {
    if (fence_ && seq >= *fence_) {
        fence_.reset();
        awaiting_ = 0;
    }
}

std::optional<InboundLanes::Clock::time_point> InboundLanes::next_retry() const {
    std::optional<Clock::time_point> best;
    for (const auto& [seq, e] : entries_)
        if (!e.in_flight && e.failures > 0 && (!best || e.not_before < *best)) best = e.not_before;
    return best;
}

}  // namespace once::relay
