#include "sinks/webhook_signature.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

using namespace once::relay;

namespace {

const char* kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

std::string error_of(const std::string& secret) {
    try {
        parse_webhook_secret(secret);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

// The Standard Webhooks test vector (the reference libraries' tests): this id, timestamp,
// payload and secret sign to exactly this.
TEST(WebhookSignature, PublishedTestVector) {
    std::vector<WebhookKey> keys{parse_webhook_secret(kSecret)};
    EXPECT_EQ(webhook_signature(keys, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
              "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(WebhookSignature, PrefixIsOptional) {
    std::vector<WebhookKey> keys{parse_webhook_secret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")};
    EXPECT_EQ(webhook_signature(keys, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
              "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(WebhookSignature, RotationSignsWithEachKeySpaceSeparated) {
    auto other = parse_webhook_secret("whsec_" + base64_encode(std::string(32, 'k')));
    std::vector<WebhookKey> keys{parse_webhook_secret(kSecret), other};
    std::string sig = webhook_signature(keys, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})");
    EXPECT_EQ(sig.substr(0, sig.find(' ')), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    EXPECT_EQ(sig.substr(sig.find(' ') + 1),
              webhook_signature({other}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"));
    EXPECT_EQ(std::count(sig.begin(), sig.end(), ' '), 1);
}

TEST(WebhookSignature, EveryPartIsSigned) {
    std::vector<WebhookKey> keys{parse_webhook_secret(kSecret)};
    std::string base = webhook_signature(keys, "id", 1, "{}");
    EXPECT_NE(base, webhook_signature(keys, "id2", 1, "{}"));
    EXPECT_NE(base, webhook_signature(keys, "id", 2, "{}"));
    EXPECT_NE(base, webhook_signature(keys, "id", 1, "{ }"));
}

TEST(WebhookSignature, BadSecretsAreRefusedWithoutEchoingThem) {
    EXPECT_NE(error_of("whsec_not*base64!").find("not base64"), std::string::npos);
    EXPECT_NE(error_of("whsec_abc").find("not base64"), std::string::npos);
    std::string short_secret = "whsec_" + base64_encode("0123456789");
    std::string e = error_of(short_secret);
    EXPECT_NE(e.find("too short"), std::string::npos) << e;
    EXPECT_EQ(e.find(short_secret.substr(6)), std::string::npos) << e;
    EXPECT_EQ(error_of(kSecret), "");
}

TEST(WebhookSignature, SecretFileHoldsOneOrMoreSecrets) {
    auto one = parse_webhook_secret_file(std::string(kSecret) + "\n");
    EXPECT_EQ(one.size(), 1u);
    auto two = parse_webhook_secret_file("# new, then old\n" + std::string(kSecret) + "\r\n  whsec_" +
                                         base64_encode(std::string(24, 'x')) + "\n\n");
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[1].bytes, std::string(24, 'x'));
    EXPECT_THROW(parse_webhook_secret_file("# nothing\n\n"), std::invalid_argument);
    EXPECT_THROW(parse_webhook_secret_file(std::string(kSecret) + " whsec_short"), std::invalid_argument);
}

TEST(WebhookSignature, Base64RoundTrip) {
    for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
        std::string enc = base64_encode(s);
        if (s.empty()) { EXPECT_EQ(enc, ""); continue; }
        EXPECT_EQ(base64_decode(enc), s) << enc;
    }
    EXPECT_THROW(base64_decode("ab=c"), std::invalid_argument);
    EXPECT_THROW(base64_decode("abc"), std::invalid_argument);
}
