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
    if (!waiting) return s;
    std::string at_least = waiting->at_least ? "at least " : "";
    if (waiting->wal_slot.empty())
        return s + fmt::format("; {}{} message(s) waiting in the outbox", at_least, waiting->messages);
    if (waiting->wal_slot_bytes >= 0)
        s += fmt::format("; {} byte(s) of WAL waiting in slot {}", waiting->wal_slot_bytes, waiting->wal_slot);
    else
        s += fmt::format("; the messages sent meanwhile wait in slot {}", waiting->wal_slot);
    if (waiting->messages > 0) s += fmt::format("; {}{} message(s) in the outbox table", at_least, waiting->messages);
    return s;
}

}  // namespace once::relay
