// Retry delays: capped exponential backoff with full jitter (AWS architecture blog,
// "Exponential Backoff And Jitter"): delay = random(0, min(cap, base * 2^(attempt-1))).
// Full jitter spreads retries of many failed messages instead of letting them return in a
// synchronised wave against a sink that is just recovering.
#pragma once

#include <cstdint>

namespace once {

struct BackoffPolicy {
    int64_t base_ms = 1000;      // first retry window
    int64_t cap_ms = 3600000;    // the window never grows beyond this
};

// Upper bound of the window for the given attempt (1 = first retry). Never overflows.
int64_t backoff_window_ms(const BackoffPolicy& policy, int attempt);

// The delay for this attempt, given a uniform random number in [0, 1).
int64_t backoff_delay_ms(const BackoffPolicy& policy, int attempt, double uniform01);

}  // namespace once
