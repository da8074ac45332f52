#include "core/error.hpp"
#include "core/json.hpp"

#include <gtest/gtest.h>

#include <string>

using once::Json;

TEST(Json, NumbersKeepTheirSourceTextAndValue) {
    Json j = Json::parse(R"({"n": 1.50e2, "m": -0})");
    EXPECT_EQ(j.find("n")->number_text(), "1.50e2");
    EXPECT_DOUBLE_EQ(j.find("n")->as_number(), 150.0);
    EXPECT_EQ(j.find("m")->number_text(), "-0");
    EXPECT_EQ(Json::number(3).number_text(), "");
    EXPECT_EQ(j.dump(), R"({"n":150,"m":0})");
}

TEST(Json, DuplicateKeyKeepsItsFirstPlaceAndLastValue) {
    Json j = Json::parse(R"({"b":1,"a":2,"b":3})");
    ASSERT_EQ(j.members().size(), 2u);
    EXPECT_EQ(j.members()[0].first, "b");
    EXPECT_EQ(j.members()[0].second.number_text(), "3");
    EXPECT_EQ(j.dump(), R"({"b":3,"a":2})");
}

TEST(Json, ManyDistinctKeysParseQuickly) {
    std::string text = "{";
    for (int i = 0; i < 200000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
    text += "}";
    Json j = Json::parse(text);
    EXPECT_EQ(j.members().size(), 200000u);
    EXPECT_EQ(j.find("k199999")->number_text(), "199999");
}

TEST(Json, DepthLimitIsKMaxJsonDepth) {
    auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
    EXPECT_NO_THROW(Json::parse(nested(once::kMaxJsonDepth + 1)));  // depths 0..kMaxJsonDepth
    EXPECT_THROW(Json::parse(nested(once::kMaxJsonDepth + 2)), once::Error);
}

TEST(Json, RejectsNulEscapeAndInvalidUtf8) {
    for (const char* bad : {"\"\\u0000\"", "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\""}) {
        try {
            Json::parse(bad);
            FAIL() << "accepted: " << bad;
        } catch (const once::Error& e) {
            EXPECT_EQ(e.code(), once::ErrorCode::invalid_json);
        }
    }
}

TEST(Json, AppendJsonStringEscapesMinimally) {
    std::string out;
    once::append_json_string(out, std::string("a\"\\\n\x01/\xc3\xa9", 8));
    EXPECT_EQ(out, "\"a\\\"\\\\\\n\\u0001/\xc3\xa9\"");
}
