#include "core/interval_ms.hpp"

#include <gtest/gtest.h>

#include <limits>

using once::interval_to_ms;

TEST(IntervalMs, ConvertsMonthsDaysAndMicroseconds) {
    EXPECT_EQ(interval_to_ms(0, 0, 30'000'000), 30'000);
    EXPECT_EQ(interval_to_ms(0, 1, 0), 86'400'000);
    EXPECT_EQ(interval_to_ms(1, 0, 0), int64_t(30) * 86'400'000);
    EXPECT_EQ(interval_to_ms(0, 0, -1'500), -1);  // truncated toward zero
    EXPECT_EQ(interval_to_ms(-1, 0, 0), -int64_t(30) * 86'400'000);
}

TEST(IntervalMs, OverflowIsReportedNotWrapped) {
    // issue 10: interval '3600000 months 9115544073769551616 microseconds' wrapped around to a
    // small positive number and passed the lease check
    EXPECT_EQ(interval_to_ms(3'600'000, 0, 9'115'544'073'769'551'616), std::nullopt);
    EXPECT_EQ(interval_to_ms(std::numeric_limits<int32_t>::max(), 0, 0), std::nullopt);
    EXPECT_EQ(interval_to_ms(0, 0, std::numeric_limits<int64_t>::max()), std::numeric_limits<int64_t>::max() / 1000);
    EXPECT_EQ(interval_to_ms(0, 1, std::numeric_limits<int64_t>::max()), std::nullopt);
    EXPECT_EQ(interval_to_ms(0, std::numeric_limits<int32_t>::min(), std::numeric_limits<int64_t>::min()),
              std::nullopt);
}
