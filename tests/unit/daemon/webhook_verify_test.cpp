#include "inbound/webhook_verify.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace once::relay;

namespace {

// The Standard Webhooks test vector (sinks/webhook_signature_test.cpp has the signing side).
const char* kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const char* kId = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const char* kTimestamp = "1614265330";
const int64_t kSent = 1614265330;
const char* kBody = R"({"test": 2432232314})";
const char* kSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const std::chrono::seconds kTolerance{300};

std::vector<WebhookKey> keys(std::initializer_list<std::string> secrets) {
    std::vector<WebhookKey> out;
    for (const auto& s : secrets) out.push_back(parse_webhook_secret(s));
    return out;
}

std::string other_secret(char fill) { return "whsec_" + base64_encode(std::string(32, fill)); }

WebhookCheck check(const std::vector<WebhookKey>& k, std::string_view signature, std::string_view body = kBody,
                   int64_t now = kSent, std::string_view id = kId, std::string_view ts = kTimestamp) {
    return verify_webhook(k, id, ts, signature, body, now, kTolerance);
}

}  // namespace

TEST(WebhookVerify, PublishedTestVectorVerifies) {
    EXPECT_EQ(check(keys({kSecret}), kSignature), WebhookCheck::verified);
}

TEST(WebhookVerify, TamperedBodyIdOrTimestampFails) {
    auto k = keys({kSecret});
    EXPECT_EQ(check(k, kSignature, R"({"test": 2432232315})"), WebhookCheck::no_matching_signature);
    EXPECT_EQ(check(k, kSignature, kBody, kSent, "msg_p5jXN8AQM9LWM0D4loKWxJel"), WebhookCheck::no_matching_signature);
    EXPECT_EQ(check(k, kSignature, kBody, kSent, kId, "1614265331"), WebhookCheck::no_matching_signature);
}

TEST(WebhookVerify, WrongSecretFails) {
    EXPECT_EQ(check(keys({other_secret('x')}), kSignature), WebhookCheck::no_matching_signature);
}

TEST(WebhookVerify, AnyConfiguredSecretVerifiesDuringARotation) {
    EXPECT_EQ(check(keys({other_secret('x'), kSecret}), kSignature), WebhookCheck::verified);
    EXPECT_EQ(check(keys({kSecret, other_secret('x')}), kSignature), WebhookCheck::verified);
}

TEST(WebhookVerify, AnyOfSeveralSignaturesMayMatch) {
    auto k = keys({kSecret});
    std::string stranger = webhook_signature(keys({other_secret('y')}), kId, kSent, kBody);
    EXPECT_EQ(check(k, stranger + " " + kSignature), WebhookCheck::verified);
    EXPECT_EQ(check(k, std::string(kSignature) + " " + stranger), WebhookCheck::verified);
    EXPECT_EQ(check(k, stranger), WebhookCheck::no_matching_signature);
}

TEST(WebhookVerify, OnlyVersionOneSignaturesCount) {
    auto k = keys({kSecret});
    EXPECT_EQ(check(k, "v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="), WebhookCheck::no_matching_signature);
    EXPECT_EQ(check(k, "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="), WebhookCheck::no_matching_signature);
    EXPECT_EQ(check(k, "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="), WebhookCheck::no_matching_signature);
    // a prefix or an extension of the right signature is not the signature
    EXPECT_EQ(check(k, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE"), WebhookCheck::no_matching_signature);
    EXPECT_EQ(check(k, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=="), WebhookCheck::no_matching_signature);
}

TEST(WebhookVerify, TimestampToleranceBothWays) {
    auto k = keys({kSecret});
    EXPECT_EQ(check(k, kSignature, kBody, kSent + 300), WebhookCheck::verified);
    EXPECT_EQ(check(k, kSignature, kBody, kSent - 300), WebhookCheck::verified);
    EXPECT_EQ(check(k, kSignature, kBody, kSent + 301), WebhookCheck::timestamp_too_old);
    EXPECT_EQ(check(k, kSignature, kBody, kSent - 301), WebhookCheck::timestamp_too_new);
    // the timestamp is checked before the signature: a stale request never costs an HMAC
    EXPECT_EQ(check(k, "v1,forged", kBody, kSent + 10000), WebhookCheck::timestamp_too_old);
}

TEST(WebhookVerify, MissingOrMalformedHeaders) {
    auto k = keys({kSecret});
    EXPECT_EQ(check(k, ""), WebhookCheck::missing_headers);
    EXPECT_EQ(check(k, kSignature, kBody, kSent, ""), WebhookCheck::missing_headers);
    EXPECT_EQ(check(k, kSignature, kBody, kSent, kId, ""), WebhookCheck::missing_headers);
    for (const char* ts : {"-1614265330", "+1614265330", "01614265330", "1614265330.0", "16142653301614265330", "abc",
                           " 1614265330"})
        EXPECT_EQ(check(k, kSignature, kBody, kSent, kId, ts), WebhookCheck::bad_timestamp) << ts;
}

TEST(WebhookVerify, DescriptionsNeverHoldTheSignature) {
    for (auto c : {WebhookCheck::verified, WebhookCheck::missing_headers, WebhookCheck::bad_timestamp,
                   WebhookCheck::timestamp_too_old, WebhookCheck::timestamp_too_new, WebhookCheck::no_matching_signature}) {
        std::string d = describe(c);
        EXPECT_FALSE(d.empty());
        EXPECT_EQ(d.find("g0hM9"), std::string::npos);
    }
}
