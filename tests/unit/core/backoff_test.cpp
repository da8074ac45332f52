#include "core/backoff.hpp"

#include <gtest/gtest.h>

using once::BackoffPolicy;

TEST(Backoff, WindowDoublesUntilTheCap) {
    BackoffPolicy p{1000, 60000};
    EXPECT_EQ(once::backoff_window_ms(p, 1), 1000);
    EXPECT_EQ(once::backoff_window_ms(p, 2), 2000);
    EXPECT_EQ(once::backoff_window_ms(p, 3), 4000);
    EXPECT_EQ(once::backoff_window_ms(p, 6), 32000);
    EXPECT_EQ(once::backoff_window_ms(p, 7), 60000);
    EXPECT_EQ(once::backoff_window_ms(p, 1000000), 60000);  // no overflow for huge attempts
}

TEST(Backoff, FullJitterStaysInsideTheWindow) {
    BackoffPolicy p{500, 10000};
    for (int attempt = 1; attempt < 40; ++attempt) {
        const int64_t window = once::backoff_window_ms(p, attempt);
        EXPECT_EQ(once::backoff_delay_ms(p, attempt, 0.0), 0);
        EXPECT_LE(once::backoff_delay_ms(p, attempt, 0.999999), window);
        EXPECT_LE(once::backoff_delay_ms(p, attempt, 1.0), window);   // clamped
        EXPECT_GE(once::backoff_delay_ms(p, attempt, -3.0), 0);        // clamped
    }
}

TEST(Backoff, JitterSpreadsRetries) {
    BackoffPolicy p{1000, 1000000};
    EXPECT_LT(once::backoff_delay_ms(p, 5, 0.25), once::backoff_delay_ms(p, 5, 0.75));
}

TEST(Backoff, NonsensePoliciesDoNotGoNegative) {
    BackoffPolicy p{-5, -1};
    EXPECT_EQ(once::backoff_window_ms(p, 3), 0);
    EXPECT_EQ(once::backoff_delay_ms(p, 3, 0.5), 0);
    BackoffPolicy q{1000, 500};  // cap below base: cap wins
    EXPECT_EQ(once::backoff_window_ms(q, 1), 500);
}
