#include "outage.hpp"

#include <spdlog/fmt/fmt.h>

namespace once::relay {

bool Outage::down(Clock::time_point now, const std::string& reason) {
    if (active_) return false;
    active_ = true;
    reason_ = reason;
    since_ = now;
    failures_ = 0;
    return true;
}

std::optional<Outage::Clock::duration> Outage::up(Clock::time_point now) {
    if (!active_) return std::nullopt;
    active_ = false;
    return now - since_;
}

std::string outage_end_text(Outage::Clock::duration lasted, const std::string& reason, uint64_t failures,
                            const std::optional<WaitingCount>& waiting) {
    std::string s = fmt::format("after {:.1f} s (down since: {}); {} attempt(s) failed meanwhile",
                                std::chrono::duration<double>(lasted).count(), reason, failures);
    if (waiting)
        s += fmt::format("; {}{} message(s) waiting in the outbox", waiting->at_least ? "at least " : "", waiting->messages);
    return s;
}

}  // namespace once::relay
