// An SQL interval as a number of milliseconds, with checked arithmetic.
//
// PostgreSQL stores an interval as months, days and microseconds; pg_once counts a month as
// 30 days (as PostgreSQL's own interval comparison does). months * 30 days in microseconds
// overflows 64 bits for intervals a caller can type ('3600000 months 9115544073769551616
// microseconds' used to wrap around into a small positive lease), so every step is checked.
#pragma once

#include <cstdint>
#include <optional>

namespace once {

// Whole milliseconds of months/days/microseconds (truncated toward zero), or nullopt when the
// total does not fit in 64-bit microseconds.
std::optional<int64_t> interval_to_ms(int32_t months, int32_t days, int64_t microseconds);

}  // namespace once
