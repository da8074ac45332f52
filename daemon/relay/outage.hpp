// An outage of something the relay depends on (its sink, its database) as the log tells it:
// one line when it starts, with the reason, and one when it ends, with how long it lasted,
// how many attempts failed meanwhile and how many messages waited. Failed attempts in
// between are counted, not logged (above debug). Pure logic: the relay loop feeds it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace once::relay {

// Messages waiting in the outbox when an outage ended (once.relay_topic_gauges()).
struct WaitingCount {
    int64_t messages = 0;
    bool at_least = false;   // a count reached its bound
    // --transport wal: the slot, and the WAL it holds back (bytes; -1: unknown). The messages
    // sent meanwhile wait there, not in the table, so the line names the slot.
    std::string wal_slot;
    int64_t wal_slot_bytes = -1;
};

class Outage {
public:
    using Clock = std::chrono::steady_clock;

    // It is down. True when this starts an outage: log it (with reason()).
    bool down(Clock::time_point now, const std::string& reason);
    // It works again. The outage's length when this ends one (log it), else nothing.
    std::optional<Clock::duration> up(Clock::time_point now);
    bool active() const { return active_; }
    const std::string& reason() const { return reason_; }
    // Attempts that failed after the outage started (count() calls while it is active).
    uint64_t failures() const { return failures_; }
    void count() { if (active_) ++failures_; }

private:
    bool active_ = false;
    std::string reason_;
    Clock::time_point since_{};
    uint64_t failures_ = 0;
};

// The line that ends an outage, after "<what> ": "back after 12.3 s (down since: <reason>); 57
// attempt(s) failed meanwhile; 1234 message(s) waiting in the outbox"; on the WAL transport
// "...; 52428800 byte(s) of WAL waiting in slot once_relay; 3 message(s) in the outbox table".
std::string outage_end_text(Outage::Clock::duration lasted, const std::string& reason, uint64_t failures,
                            const std::optional<WaitingCount>& waiting);

}  // namespace once::relay
