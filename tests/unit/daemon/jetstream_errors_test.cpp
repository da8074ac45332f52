#include "sinks/jetstream_errors.hpp"

#include <gtest/gtest.h>

using namespace once::relay;

TEST(JetStreamErrors, AMessageTooLargeForTheStreamIsDeadAtOnce) {
    EXPECT_EQ(jetstream_publish_error_verdict(10054), Verdict::dead);
}

TEST(JetStreamErrors, OtherErrorsAreRetried) {
    EXPECT_EQ(jetstream_publish_error_verdict(0), Verdict::retry);       // no code: a timeout, no responders
    EXPECT_EQ(jetstream_publish_error_verdict(10077), Verdict::retry);   // storing failed
    EXPECT_EQ(jetstream_publish_error_verdict(10008), Verdict::retry);   // JetStream not ready
}
