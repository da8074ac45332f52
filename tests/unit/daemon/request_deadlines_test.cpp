#include "request_deadlines.hpp"

#include <gtest/gtest.h>

using once::relay::RequestDeadlines;
using namespace std::chrono_literals;

TEST(RequestDeadlines, ABoundOnTheWholeRequestNotOnSilence) {
    RequestDeadlines d(10s);
    auto t0 = RequestDeadlines::Clock::time_point{} + 1h;
    d.waiting(1, t0);
    // However often the client sends a piece, nothing moves the deadline but the request's end.
    EXPECT_TRUE(d.expired(t0 + 9999ms).empty());
    EXPECT_EQ(d.next(), t0 + 10s);
    EXPECT_EQ(d.expired(t0 + 10s), std::vector<std::uint64_t>{1});
    EXPECT_TRUE(d.expired(t0 + 20s).empty()) << "reported once";
    EXPECT_FALSE(d.next());
}

TEST(RequestDeadlines, NoDeadlineWhileTheServerAnswers) {
    RequestDeadlines d(5s);
    auto t0 = RequestDeadlines::Clock::time_point{} + 1h;
    d.waiting(1, t0);
    d.waiting(2, t0 + 1s);
    d.received(1);
    EXPECT_EQ(d.expired(t0 + 1min), std::vector<std::uint64_t>{2});
    // Answered: the next request on the kept-alive connection has its own bound.
    d.waiting(1, t0 + 2min);
    EXPECT_TRUE(d.expired(t0 + 2min + 4s).empty());
    EXPECT_EQ(d.expired(t0 + 2min + 5s), std::vector<std::uint64_t>{1});
}

TEST(RequestDeadlines, ClosedConnectionsAreForgottenAndTheEarliestComesNext) {
    RequestDeadlines d(5s);
    auto t0 = RequestDeadlines::Clock::time_point{} + 1h;
    for (std::uint64_t id = 1; id <= 3; ++id) d.waiting(id, t0 + std::chrono::seconds(id));
    EXPECT_EQ(d.size(), 3u);
    d.forget(1);
    EXPECT_EQ(d.next(), t0 + 7s);
    d.forget(42);   // unknown: nothing happens
    EXPECT_EQ(d.expired(t0 + 1h), (std::vector<std::uint64_t>{2, 3}));
    EXPECT_EQ(d.size(), 0u);
}
