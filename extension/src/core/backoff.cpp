#include "backoff.hpp"

#include <algorithm>

namespace once {

int64_t backoff_window_ms(const BackoffPolicy& policy, int attempt) {
    const int64_t base = std::max<int64_t>(policy.base_ms, 0);
    const int64_t cap = std::max<int64_t>(policy.cap_ms, 0);
    if (attempt < 1) attempt = 1;
    int64_t window = base;
    for (int i = 1; i < attempt && window < cap; ++i) {
        if (window > cap / 2) { window = cap; break; }  // doubling would pass the cap
        window *= 2;
    }
    return std::min(window, cap);
}

int64_t backoff_delay_ms(const BackoffPolicy& policy, int attempt, double uniform01) {
    const int64_t window = backoff_window_ms(policy, attempt);
    double u = uniform01 < 0 ? 0 : (uniform01 >= 1 ? 0.999999999 : uniform01);
    return static_cast<int64_t>(u * static_cast<double>(window + 1));
}

}  // namespace once
