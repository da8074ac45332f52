// The rate limit of log lines for events anyone may cause (rate_limited_log.hpp).
#include "rate_limited_log.hpp"

#include <gtest/gtest.h>

using once::relay::RateLimitedLog;
using namespace std::chrono_literals;

namespace {
const RateLimitedLog::Clock::time_point t0 = RateLimitedLog::Clock::time_point{} + 1000s;
}

TEST(RateLimitedLog, TheFirstEventIsLoggedAtOnce) {
    RateLimitedLog log(10s);
    EXPECT_EQ(log.due(t0), 0u);   // nothing happened
    EXPECT_EQ(log.record(t0), 1u);
    EXPECT_EQ(log.due(t0), 0u);
}

TEST(RateLimitedLog, ABurstGivesOneLinePerIntervalWithItsCount) {
    RateLimitedLog log(10s);
    uint64_t lines = 0, reported = 0;
    for (int i = 0; i < 50'000; ++i) {   // 50,000 events within one second
        uint64_t n = log.record(t0 + std::chrono::microseconds(i * 20));
        if (n > 0) ++lines, reported += n;
    }
    EXPECT_EQ(lines, 1u);
    EXPECT_EQ(reported, 1u);
    EXPECT_EQ(log.due(t0 + 9s), 0u);          // still within the interval
    EXPECT_EQ(log.due(t0 + 10s), 49'999u);    // the rest, in one line, once it has passed
    EXPECT_EQ(log.due(t0 + 30s), 0u);         // nothing more held back
}

TEST(RateLimitedLog, EventsFartherApartThanTheIntervalAreEachLogged) {
    RateLimitedLog log(10s);
    EXPECT_EQ(log.record(t0), 1u);
    EXPECT_EQ(log.record(t0 + 10s), 1u);
    EXPECT_EQ(log.record(t0 + 25s), 1u);
    EXPECT_EQ(log.record(t0 + 26s), 0u);
    EXPECT_EQ(log.record(t0 + 35s), 2u);   // the held one and this one
}

TEST(RateLimitedLog, TakeHandsOverWhatIsHeldBackAtOnce) {
    RateLimitedLog log(10s);
    EXPECT_EQ(log.take(), 0u);
    EXPECT_EQ(log.record(t0), 1u);
    EXPECT_EQ(log.record(t0 + 1s), 0u);
    EXPECT_EQ(log.record(t0 + 2s), 0u);
    EXPECT_EQ(log.take(), 2u);
    EXPECT_EQ(log.due(t0 + 60s), 0u);
}
