// When to log an event that anyone may cause as often as they like (a pg_once WAL message
// that is not once.send's: pg_logical_emit_message is executable by every role): the first
// one at once, then at most one line per interval, which gives the number of events since the
// previous line. Pure: the caller passes the time and writes the line.
#pragma once

#include <chrono>
#include <cstdint>

namespace once::relay {

class RateLimitedLog {
public:
    using Clock = std::chrono::steady_clock;

    explicit RateLimitedLog(Clock::duration interval) : interval_(interval) {}

    // Records one event at `now`. Returns how many events a line written now reports (this
    // one and those held back since the last line), or 0 when no line is due yet.
    uint64_t record(Clock::time_point now);

    // The events held back, when a line for them is due at `now` (the interval has passed
    // since the last line); 0 otherwise. Call it periodically, so that the last events of a
    // burst are reported even when no more come.
    uint64_t due(Clock::time_point now);

    // The events held back, whatever the time: for a last line when the caller stops.
    uint64_t take();

private:
    Clock::duration interval_;
    bool logged_ = false;
    Clock::time_point last_line_{};
    uint64_t held_ = 0;
};

}  // namespace once::relay
