#include "login_limiter.hpp"

#include <algorithm>
#include <cmath>

namespace once::console {

LoginLimiter::LoginLimiter(unsigned burst, std::chrono::milliseconds window, std::size_t max_keys)
    : burst_(std::max(1u, burst)), window_(std::max(window, std::chrono::milliseconds(1))), max_keys_(std::max<std::size_t>(1, max_keys)) {}

void LoginLimiter::refill(Bucket& b, Clock::time_point now) const {
    if (now <= b.updated) return;
    double elapsed_ms = std::chrono::duration<double, std::milli>(now - b.updated).count();
    b.tokens = std::min(burst_, b.tokens + elapsed_ms * burst_ / static_cast<double>(window_.count()));
    b.updated = now;
}

void LoginLimiter::make_room(Clock::time_point now) {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
        refill(it->second, now);
        it = it->second.tokens >= burst_ ? buckets_.erase(it) : std::next(it);
    }
    if (buckets_.size() < max_keys_) return;
    auto oldest = std::min_element(buckets_.begin(), buckets_.end(),
                                   [](auto& a, auto& b) { return a.second.updated < b.second.updated; });
    buckets_.erase(oldest);
}

std::optional<std::chrono::milliseconds> LoginLimiter::take(const std::string& key, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = buckets_.find(key);
    if (it == buckets_.end()) {
        if (buckets_.size() >= max_keys_) make_room(now);
        it = buckets_.emplace(key, Bucket{burst_, now}).first;
    }
    Bucket& b = it->second;
    refill(b, now);
    if (b.tokens >= 1.0) {
        b.tokens -= 1.0;
        return std::nullopt;
    }
    double wait_ms = (1.0 - b.tokens) * static_cast<double>(window_.count()) / burst_;
    return std::chrono::milliseconds(static_cast<long long>(std::ceil(wait_ms)));
}

void LoginLimiter::give_back(const std::string& key, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = buckets_.find(key);
    if (it == buckets_.end()) return;
    refill(it->second, now);
    it->second.tokens = std::min(burst_, it->second.tokens + 1.0);
    if (it->second.tokens >= burst_) buckets_.erase(it);
}

std::size_t LoginLimiter::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return buckets_.size();
}

}  // namespace once::console
