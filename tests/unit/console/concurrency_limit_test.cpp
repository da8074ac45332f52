#include "concurrency_limit.hpp"

#include <gtest/gtest.h>

#include <utility>

using once::console::ConcurrencyLimit;

TEST(ConcurrencyLimit, TurnsAwayBeyondItsSlotsAndFreesThem) {
    ConcurrencyLimit limit(2);
    {
        auto a = limit.try_enter();
        auto b = limit.try_enter();
        EXPECT_TRUE(a);
        EXPECT_TRUE(b);
        EXPECT_FALSE(limit.try_enter());
    }
    auto c = limit.try_enter();
    EXPECT_TRUE(c);
    auto moved = std::move(c);
    EXPECT_TRUE(moved);
    EXPECT_FALSE(c);
    auto d = limit.try_enter();
    EXPECT_TRUE(d);
    EXPECT_FALSE(limit.try_enter());
}
