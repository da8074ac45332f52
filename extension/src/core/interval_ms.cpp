#include "interval_ms.hpp"

namespace once {

std::optional<int64_t> interval_to_ms(int32_t months, int32_t days, int64_t microseconds) {
    constexpr int64_t kUsPerDay = int64_t(86400) * 1000 * 1000;
    constexpr int64_t kDaysPerMonth = 30;
    int64_t month_us = 0, day_us = 0, total = 0;
    if (__builtin_mul_overflow(int64_t(months), kDaysPerMonth * kUsPerDay, &month_us) ||
        __builtin_mul_overflow(int64_t(days), kUsPerDay, &day_us) ||
        __builtin_add_overflow(month_us, day_us, &total) ||
        __builtin_add_overflow(total, microseconds, &total))
        return std::nullopt;
    return total / 1000;
}

}  // namespace once
