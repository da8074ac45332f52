#include "rates.hpp"

#include <gtest/gtest.h>

using namespace once::console;

TEST(Rates, PerSecondBetweenSamples) {
    RateHistory h(3);
    h.add({100, 1000, 500});
    h.add({110, 1500, 1500});
    h.add({120, 1500, 1600});
    Rates r = h.rates();
    ASSERT_EQ(r.sent.size(), 2u);
    EXPECT_DOUBLE_EQ(r.sent[0], 50);
    EXPECT_DOUBLE_EQ(r.acked[0], 100);
    EXPECT_DOUBLE_EQ(r.sent[1], 0);
    EXPECT_DOUBLE_EQ(r.acked[1], 10);
    EXPECT_DOUBLE_EQ(r.at[1], 120);
}

TEST(Rates, KeepsTheLastSamplesAndSkipsResets) {
    RateHistory h(3);
    h.add({0, 0, 0});
    h.add({10, 100, 100});
    h.add({20, 5, 5});      // statistics reset: no rate for this interval
    h.add({30, 105, 55});   // the first sample falls out
    EXPECT_EQ(h.size(), 3u);
    Rates r = h.rates();
    ASSERT_EQ(r.sent.size(), 1u);
    EXPECT_DOUBLE_EQ(r.sent[0], 10);
    EXPECT_DOUBLE_EQ(r.acked[0], 5);
}

TEST(Rates, NoRateFromOneSample) {
    RateHistory h;
    EXPECT_TRUE(h.rates().sent.empty());
    h.add({1, 1, 1});
    EXPECT_TRUE(h.rates().sent.empty());
}

TEST(Sparkline, BarsScaledToTheMaximum) {
    std::string svg = sparkline_svg("rate-sent", {0, 5, 10}, "msg/s");
    EXPECT_NE(svg.find("<svg id=\"rate-sent\""), std::string::npos);
    EXPECT_NE(svg.find("height=38 fill"), std::string::npos);   // the maximum: full height (40 - 2)
    EXPECT_NE(svg.find("height=19 fill"), std::string::npos);   // half of it
    EXPECT_NE(svg.find("10 msg/s now, max 10"), std::string::npos);
    EXPECT_EQ(svg.find("<script"), std::string::npos);
}

TEST(Sparkline, NoDataYet) {
    EXPECT_NE(sparkline_svg("rate-acked", {}, "msg/s").find("no data yet"), std::string::npos);
    std::string zero = sparkline_svg("z", {0, 0}, "msg/s");
    EXPECT_NE(zero.find("0 msg/s now, max 0"), std::string::npos);
}
