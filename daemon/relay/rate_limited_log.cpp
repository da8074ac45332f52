#include "rate_limited_log.hpp"

namespace once::relay {

uint64_t RateLimitedLog::record(Clock::time_point now) {
    ++held_;
    return due(now);
}

uint64_t RateLimitedLog::due(Clock::time_point now) {
    if (held_ == 0) return 0;
    if (logged_ && now - last_line_ < interval_) return 0;
    logged_ = true;
    last_line_ = now;
    uint64_t n = held_;
    held_ = 0;
    return n;
}

uint64_t RateLimitedLog::take() {
    uint64_t n = held_;
    held_ = 0;
    return n;
}

}  // namespace once::relay
