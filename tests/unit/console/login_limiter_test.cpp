#include "login_limiter.hpp"

#include <gtest/gtest.h>

using once::console::LoginLimiter;
using namespace std::chrono_literals;

namespace {
const auto t0 = LoginLimiter::Clock::time_point{} + 1h;
}

TEST(LoginLimiter, BurstThenRefused) {
    LoginLimiter l(3, 60s);
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(l.take("10.0.0.1", t0)) << i;
    auto wait = l.take("10.0.0.1", t0);
    ASSERT_TRUE(wait);
    EXPECT_EQ(*wait, 20s);   // one attempt refills every 60s / 3
    // Refused attempts do not dig deeper: the wait only shrinks with time.
    EXPECT_EQ(l.take("10.0.0.1", t0), 20s);
    EXPECT_EQ(l.take("10.0.0.1", t0 + 15s), 5s);
    // Another key has its own budget.
    EXPECT_FALSE(l.take("10.0.0.2", t0));
}

TEST(LoginLimiter, RefillsAtBurstPerWindow) {
    LoginLimiter l(2, 10s);
    EXPECT_FALSE(l.take("u", t0));
    EXPECT_FALSE(l.take("u", t0));
    EXPECT_TRUE(l.take("u", t0 + 4999ms));
    EXPECT_FALSE(l.take("u", t0 + 5s));
    EXPECT_TRUE(l.take("u", t0 + 5s));
    // After a whole window the full burst is back, not more.
    EXPECT_FALSE(l.take("u", t0 + 1h));
    EXPECT_FALSE(l.take("u", t0 + 1h));
    EXPECT_TRUE(l.take("u", t0 + 1h));
}

TEST(LoginLimiter, ASuccessDoesNotCount) {
    LoginLimiter l(2, 60s);
    for (int i = 0; i < 10; ++i) {
        ASSERT_FALSE(l.take("admin", t0)) << i;
        l.give_back("admin", t0);
    }
    EXPECT_EQ(l.size(), 0u) << "a full bucket is forgotten";
    l.give_back("nobody", t0);   // unknown: nothing happens
    EXPECT_EQ(l.size(), 0u);
}

TEST(LoginLimiter, MemoryIsBoundedAndFullBucketsExpire) {
    LoginLimiter l(2, 10s, 100);
    for (int i = 0; i < 1000; ++i) l.take("addr-" + std::to_string(i), t0 + std::chrono::milliseconds(i));
    EXPECT_LE(l.size(), 100u);
    // The most recent keys are kept: the last one is still limited after one more failure.
    EXPECT_FALSE(l.take("addr-999", t0 + 1s));
    EXPECT_TRUE(l.take("addr-999", t0 + 1s));
    // Once buckets are full again, adding a key forgets all of them.
    LoginLimiter m(1, 1s, 3);
    m.take("a", t0);
    m.take("b", t0);
    m.take("c", t0);
    EXPECT_EQ(m.size(), 3u);
    m.take("d", t0 + 2s);
    EXPECT_EQ(m.size(), 1u);
}
