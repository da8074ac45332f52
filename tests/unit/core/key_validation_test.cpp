#include "core/error.hpp"
#include "core/key_validation.hpp"

#include <gtest/gtest.h>

using once::validate_key;

TEST(KeyValidation, AcceptsOrdinaryKeys) {
    EXPECT_NO_THROW(validate_key("key", "a"));
    EXPECT_NO_THROW(validate_key("key", "0b9a7c1e-4a8f-4a5e-9d0e-5c6f7a8b9c0d"));
    EXPECT_NO_THROW(validate_key("key", "caf\xc3\xa9 order #42"));
    EXPECT_NO_THROW(validate_key("key", std::string(255, 'k')));
}

TEST(KeyValidation, RejectsEmptyTooLongAndControlCharacters) {
    for (const std::string& bad : {std::string(), std::string(256, 'k'), std::string("a\nb"),
                                   std::string("tab\t"), std::string("del\x7f")}) {
        try {
            validate_key("idempotency key", bad);
            FAIL() << "accepted: " << bad;
        } catch (const once::Error& e) {
            EXPECT_EQ(e.code(), once::ErrorCode::invalid_key);
            EXPECT_NE(std::string(e.what()).find("idempotency key"), std::string::npos);
        }
    }
}

TEST(KeyValidation, LimitIsInBytesNotCharacters) {
    std::string multibyte;
    for (int i = 0; i < 128; ++i) multibyte += "\xc3\xa9";  // 128 characters, 256 bytes
    EXPECT_THROW(validate_key("key", multibyte), once::Error);
}
