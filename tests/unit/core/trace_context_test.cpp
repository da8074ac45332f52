#include "core/trace_context.hpp"

#include <gtest/gtest.h>

namespace {
const char* kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";  // the specification's example
}

TEST(TraceParent, ParsesTheSpecificationsExample) {
    auto t = once::parse_traceparent(kValid);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->version, "00");
    EXPECT_EQ(t->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    EXPECT_EQ(t->parent_id, "00f067aa0ba902b7");
    EXPECT_EQ(t->flags, "01");
}

TEST(TraceParent, RefusesWhatTheSpecificationRefuses) {
    std::string why;
    for (const char* bad : {"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",            // short
                            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",              // upper case
                            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",              // zero trace id
                            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",              // zero parent
                            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",              // version ff
                            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",        // 00 with more
                            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",              // separator
                            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"}) {          // not hex
        why.clear();
        EXPECT_FALSE(once::parse_traceparent(bad, &why)) << bad;
        EXPECT_FALSE(why.empty()) << bad;
    }
    EXPECT_TRUE(once::parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"));
    EXPECT_FALSE(once::parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"));
}

TEST(TraceParent, ChildKeepsTraceAndFlagsWithANewSpan) {
    auto t = once::parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later");
    ASSERT_TRUE(t);
    EXPECT_EQ(once::child_traceparent(*t, {0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3}),
              "00-4bf92f3577b34da6a3ce929d0e0e4736-deadbeef00010203-01");
    EXPECT_EQ(once::child_traceparent(*t, {0, 0, 0, 0, 0, 0, 0, 0}),
              "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000001-01");
    EXPECT_TRUE(once::parse_traceparent(once::child_traceparent(*t, {1, 2, 3, 4, 5, 6, 7, 8})));
}

TEST(TraceState, PrintableAsciiUpTo512) {
    EXPECT_TRUE(once::valid_tracestate(""));
    EXPECT_TRUE(once::valid_tracestate("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"));
    EXPECT_TRUE(once::valid_tracestate(std::string(512, 'a')));
    EXPECT_FALSE(once::valid_tracestate(std::string(513, 'a')));
    std::string why;
    EXPECT_FALSE(once::valid_tracestate("a=b\nc=d", &why));
    EXPECT_FALSE(why.empty());
}
