// The total time a client may take to send a request, per connection of an HTTP listener.
// libmicrohttpd's connection timeout counts only silence, so a client that sends a header
// line every few seconds could hold a connection for ever; this bounds the whole read.
// Pure bookkeeping: the listener (http_listener.cpp) feeds it events and closes what it
// reports as expired.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace once::relay {

class RequestDeadlines {
public:
    using Clock = std::chrono::steady_clock;

    explicit RequestDeadlines(std::chrono::milliseconds limit) : limit_(limit) {}

    // Connection `id` waits for a request from `now` on: it opened, or answered the previous
    // request and stays open for the next one.
    void waiting(std::uint64_t id, Clock::time_point now);
    // Connection `id` has sent its whole request (headers and body): the server's turn, no
    // deadline until the answer is sent.
    void received(std::uint64_t id);
    // Connection `id` closed.
    void forget(std::uint64_t id);

    // The connections whose deadline is past at `now`; each is reported once.
    std::vector<std::uint64_t> expired(Clock::time_point now);
    // The earliest deadline, if any connection is waiting.
    std::optional<Clock::time_point> next() const;
    std::size_t size() const { return deadline_.size(); }
    std::chrono::milliseconds limit() const { return limit_; }

private:
    std::chrono::milliseconds limit_;
    std::map<std::uint64_t, Clock::time_point> deadline_;   // only connections that are waiting
};

}  // namespace once::relay
