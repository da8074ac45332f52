#include "request_deadlines.hpp"

namespace once::relay {

void RequestDeadlines::waiting(std::uint64_t id, Clock::time_point now) { deadline_[id] = now + limit_; }

void RequestDeadlines::received(std::uint64_t id) { deadline_.erase(id); }

void RequestDeadlines::forget(std::uint64_t id) { deadline_.erase(id); }

std::vector<std::uint64_t> RequestDeadlines::expired(Clock::time_point now) {
    std::vector<std::uint64_t> out;
    for (auto it = deadline_.begin(); it != deadline_.end();) {
        if (it->second <= now) {
            out.push_back(it->first);
            it = deadline_.erase(it);
        } else {
            ++it;
        }
    }
    return out;
}

std::optional<RequestDeadlines::Clock::time_point> RequestDeadlines::next() const {
    std::optional<Clock::time_point> first;
    for (auto& [id, at] : deadline_)
        if (!first || at < *first) first = at;
    return first;
}

}  // namespace once::relay
