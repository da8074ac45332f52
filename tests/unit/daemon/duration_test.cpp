#include "duration.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace once::relay;

TEST(Duration, ParsesUnits) {
    EXPECT_EQ(parse_duration("200ms").count(), 200);
    EXPECT_EQ(parse_duration("30s").count(), 30000);
    EXPECT_EQ(parse_duration("5min").count(), 300000);
    EXPECT_EQ(parse_duration("1h").count(), 3600000);
    EXPECT_EQ(parse_duration("1.5s").count(), 1500);
    EXPECT_EQ(parse_duration("0ms").count(), 0);
    EXPECT_EQ(parse_duration("2 s").count(), 2000);
}

TEST(Duration, RefusesBadValues) {
    for (const char* bad : {"", "5", "s", "-1s", "1.2.3s", "10m", "10parsecs", "0.5ms", "1e3s", "99999999999h"}) {
        try {
            parse_duration(bad);
            FAIL() << "accepted " << bad;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << "message names the value: " << e.what();
        }
    }
}

TEST(Duration, FormatsShortestExact) {
    EXPECT_EQ(format_duration(Millis(1500)), "1500ms");
    EXPECT_EQ(format_duration(Millis(30000)), "30s");
    EXPECT_EQ(format_duration(Millis(300000)), "5min");
    EXPECT_EQ(format_duration(Millis(7200000)), "2h");
    EXPECT_EQ(format_duration(Millis(0)), "0ms");
    EXPECT_EQ(pg_interval(Millis(1500)), "1500 milliseconds");
    for (const char* s : {"200ms", "30s", "5min", "1h"}) EXPECT_EQ(format_duration(parse_duration(s)), s);
}
