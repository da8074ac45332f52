#include "core/content_type.hpp"

#include <gtest/gtest.h>

using once::content_type_error;
using once::delivered_body;
using once::is_json_content_type;

TEST(ContentType, AcceptsMediaTypesWithParameters) {
    for (const char* ok : {"application/xml", "text/plain", "application/vnd.example.order+json",
                           "text/plain; charset=utf-8", "text/plain;charset=UTF-8;format=flowed",
                           "multipart/form-data; boundary=\"a b;c\"", "application/octet-stream",
                           "APPLICATION/JSON"})
        EXPECT_FALSE(content_type_error(ok).has_value()) << ok << ": " << content_type_error(ok).value_or("");
}

TEST(ContentType, RefusesWhatIsNoMediaType) {
    for (const char* bad : {"", "xml", "application/", "/xml", "application/xml/x", "text/plain;", "text/plain; charset",
                            "text/plain; charset=", "text/plain; =utf-8", "text/plain; a=\"open", "text /plain",
                            "text/pl ain", "-text/plain", "text/plain\r\nX-Evil: 1", "tëxt/plain",
                            "text/plain, application/json"})
        EXPECT_TRUE(content_type_error(bad).has_value()) << bad;
}

TEST(ContentType, IsBounded) {
    std::string longest = "application/" + std::string(once::kMaxContentTypeBytes - 12, 'x');
    // (a subtype is at most 127 characters: parameters make up the rest)
    std::string with_params = "application/xml; a=" + std::string(once::kMaxContentTypeBytes - 19, 'v');
    EXPECT_FALSE(content_type_error(with_params).has_value());
    EXPECT_TRUE(content_type_error(with_params + "v").has_value());
    EXPECT_TRUE(content_type_error("application/" + std::string(128, 'x')).has_value());
    EXPECT_NE(content_type_error(longest + "x").value_or("").find("at most 255"), std::string::npos);
}

TEST(ContentType, JsonTypes) {
    EXPECT_TRUE(is_json_content_type("application/json"));
    EXPECT_TRUE(is_json_content_type("Application/JSON; charset=utf-8"));
    EXPECT_TRUE(is_json_content_type("application/cloudevents+json"));
    EXPECT_FALSE(is_json_content_type("application/xml"));
    EXPECT_FALSE(is_json_content_type("text/plain; note=+json"));
    EXPECT_FALSE(is_json_content_type("application/jsonx"));
}

TEST(ContentType, DeliveredBody) {
    EXPECT_EQ(delivered_body(R"({"a":1})", ""), R"({"a":1})");
    EXPECT_EQ(delivered_body(R"("x")", "application/json"), R"("x")");
    EXPECT_EQ(delivered_body(R"("<order id=\"1\"/>\n")", "application/xml"), "<order id=\"1\"/>\n");
    EXPECT_EQ(delivered_body(R"("caf\u00e9")", "text/plain; charset=utf-8"), "caf\xC3\xA9");
    EXPECT_EQ(delivered_body(R"({"a":1})", "text/plain"), R"({"a":1})");
}
