// The bound on how long a frozen relay holds a locked batch is derived from the relay's own
// timeouts, and the locked sessions are told to enforce exactly that bound.
#include "outbox/locked_hold_bound.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace once::relay;

namespace {

bool has(const std::vector<std::string>& settings, const std::string& setting) {
    for (const auto& s : settings)
        if (s == setting) return true;
    return false;
}

}  // namespace

TEST(LockedHoldBound, IsThePublishLimitPlusOneAnswerPlusTheMargin) {
    EXPECT_EQ(locked_publish_limit(Millis(30000)), Millis(30000));   // --lease
    EXPECT_EQ(locked_hold_bound(Millis(30000), Millis(10000)), Millis(45000));   // the defaults: 45 s
    EXPECT_EQ(locked_hold_bound(Millis(3000), Millis(1000)), Millis(9000));
    // Every publish the relay still makes is answered (or timed out) before the server acts.
    EXPECT_GT(locked_hold_bound(Millis(1000), Millis(99000)), locked_publish_limit(Millis(1000)) + Millis(99000));
}

TEST(LockedHoldBound, TheSessionEndsAnIdleTransactionAtTheBound) {
    auto s = locked_session_settings(Millis(45000));
    EXPECT_TRUE(has(s, "SET idle_in_transaction_session_timeout = 45000"));
    EXPECT_TRUE(has(s, "SET tcp_user_timeout = 45000"));
    EXPECT_TRUE(has(s, "SET tcp_keepalives_idle = 10"));
    EXPECT_TRUE(has(s, "SET tcp_keepalives_interval = 5"));
    EXPECT_TRUE(has(s, "SET tcp_keepalives_count = 3"));
}
