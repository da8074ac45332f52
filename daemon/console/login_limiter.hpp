// A budget of failed logins per key (a client address, or a user name), checked before a
// password is hashed: each key has a bucket of `burst` attempts that refills at `burst` per
// `window`. Over the budget a login is refused at once (HTTP 429 with Retry-After), so a
// guesser gets `burst` tries and then `burst` per `window`, and never makes the console hash.
// Memory is bounded: a key whose bucket is full again is forgotten, and at `max_keys` the key
// touched longest ago gives way to a new one.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace once::console {

class LoginLimiter {
public:
    using Clock = std::chrono::steady_clock;

    LoginLimiter(unsigned burst, std::chrono::milliseconds window, std::size_t max_keys = 4096);

    // Takes one attempt from the key's budget. None when it may go ahead; otherwise how long
    // until it may (the budget is left as it was).
    std::optional<std::chrono::milliseconds> take(const std::string& key, Clock::time_point now);
    // The attempt succeeded: it does not count against the key.
    void give_back(const std::string& key, Clock::time_point now);
    std::size_t size() const;   // keys remembered

private:
    struct Bucket {
        double tokens;
        Clock::time_point updated;
    };
    void refill(Bucket& b, Clock::time_point now) const;
    void make_room(Clock::time_point now);

    double burst_;
    std::chrono::milliseconds window_;
    std::size_t max_keys_;
    mutable std::mutex mu_;
    std::map<std::string, Bucket> buckets_;
};

}  // namespace once::console
