#include "core/canonical_json.hpp"
#include "core/error.hpp"

#include <gtest/gtest.h>

using once::canonical_json;

TEST(CanonicalJson, KeyOrderAndWhitespaceDoNotMatter) {
    EXPECT_EQ(canonical_json(R"({"b":1,"a":2})"), canonical_json(R"( { "a" : 2 ,
        "b":1 } )"));
    EXPECT_EQ(canonical_json(R"({"b":1,"a":2})"), R"({"a":2,"b":1})");
}

TEST(CanonicalJson, NestedObjectsAreSortedToo) {
    EXPECT_EQ(canonical_json(R"({"z":{"y":[{"b":1,"a":0}],"x":null},"a":true})"),
              R"({"a":true,"z":{"x":null,"y":[{"a":0,"b":1}]}})");
}

TEST(CanonicalJson, ArrayOrderMatters) {
    EXPECT_NE(canonical_json("[1,2]"), canonical_json("[2,1]"));
}

TEST(CanonicalJson, NumbersAreNormalised) {
    EXPECT_EQ(canonical_json("1.0"), "1");
    EXPECT_EQ(canonical_json("1.50"), "1.5");
    EXPECT_EQ(canonical_json("15e-1"), "1.5");
    EXPECT_EQ(canonical_json("1e2"), "100");
    EXPECT_EQ(canonical_json("100.000"), "100");
    EXPECT_EQ(canonical_json("-0"), "0");
    EXPECT_EQ(canonical_json("-0.0e5"), "0");
    EXPECT_EQ(canonical_json("0.001"), "0.001");
    EXPECT_EQ(canonical_json("1E-3"), "0.001");
    EXPECT_EQ(canonical_json("-12.340"), "-12.34");
    EXPECT_EQ(canonical_json("12345678901234567890.5"), "12345678901234567890.5");
    EXPECT_EQ(canonical_json("1e100"), "1e100");
    EXPECT_EQ(canonical_json("2.5e-100"), "2.5e-100");
    EXPECT_NE(canonical_json("1"), canonical_json("\"1\""));
    EXPECT_NE(canonical_json("0.1"), canonical_json("0.10000000000000001"));  // exact, not double
}

TEST(CanonicalJson, UnicodeEscapesAndRawUtf8AreTheSame) {
    EXPECT_EQ(canonical_json(R"("caf\u00e9")"), canonical_json("\"caf\xc3\xa9\""));
    EXPECT_EQ(canonical_json(R"("\ud83d\ude00")"), "\"\xf0\x9f\x98\x80\"");  // surrogate pair
    EXPECT_EQ(canonical_json(R"("\/")"), R"("/")");
    EXPECT_EQ(canonical_json(R"("a\u0001b")"), R"("a\u0001b")");
    EXPECT_EQ(canonical_json(R"("\u000a")"), R"("\n")");
}

TEST(CanonicalJson, KeysSortByUtf8Bytes) {
    EXPECT_EQ(canonical_json("{\"\xc3\xa9\":1,\"z\":2,\"A\":3}"), "{\"A\":3,\"z\":2,\"\xc3\xa9\":1}");
}

TEST(CanonicalJson, DuplicateKeysKeepTheLastValue) {
    EXPECT_EQ(canonical_json(R"({"a":1,"a":2})"), R"({"a":2})");
}

TEST(CanonicalJson, RejectsInvalidInput) {
    for (const char* bad : {"", "{", "[1,]", "{\"a\"}", "01", "1.", "-", "tru", "\"abc",
                            "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\u0000\"", "1 2",
                            "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "{\"a\":1,}", "nul",
                            "\"\x01\""}) {
        EXPECT_THROW(canonical_json(bad), once::Error) << "input: " << bad;
    }
}

TEST(CanonicalJson, RejectsTooDeepNestingWithoutCrashing) {
    std::string deep(100000, '[');
    try {
        canonical_json(deep);
        FAIL() << "expected an error";
    } catch (const once::Error& e) {
        EXPECT_EQ(e.code(), once::ErrorCode::invalid_json);
        EXPECT_NE(std::string(e.what()).find("nesting"), std::string::npos);
    }
}

TEST(CanonicalJson, IsIdempotent) {
    for (const char* in : {R"({"b":[1.0,{"d":"\u00e9","c":-0}],"a":1e3})", "[]", "{}", "\"\"", "null"}) {
        auto once_ = canonical_json(in);
        EXPECT_EQ(canonical_json(once_), once_) << in;
    }
}

// The request fingerprint walks jsonb and formats each number from PostgreSQL's numeric_out
// text with append_canonical_number: it must give what canonical_json gives for that text.
TEST(CanonicalJson, NumbersFromNumericOutMatchTheParsedForm) {
    for (const char* number : {"0", "-0", "1.50", "100", "-12.3400", "0.000100", "1e40", "1e41",
                               "123456789012345678901234567890.000001", "-0.0000000000000000000000000000000000000000001"}) {
        std::string appended;
        once::append_canonical_number(appended, number);
        EXPECT_EQ(appended, canonical_json(number)) << number;
    }
}
