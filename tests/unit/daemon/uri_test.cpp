#include "percent_encoding.hpp"
#include "uri.hpp"

#include <gtest/gtest.h>

using namespace once::relay;

TEST(Uri, ParsesNats) {
    Uri u = parse_uri("nats://alice:s3cr%40t@10.0.0.1:4222,10.0.0.2:4222?stream=ORDERS&subject_prefix=once.&create_stream=1");
    EXPECT_EQ(u.scheme, "nats");
    EXPECT_EQ(u.user, "alice");
    EXPECT_EQ(u.password, "s3cr@t");
    EXPECT_EQ(u.hosts, "10.0.0.1:4222,10.0.0.2:4222");
    EXPECT_EQ(u.param("stream"), "ORDERS");
    EXPECT_EQ(u.param("subject_prefix"), "once.");
    EXPECT_EQ(u.param("create_stream"), "1");
    EXPECT_EQ(u.param("nope", "dflt"), "dflt");
}

TEST(Uri, ParsesHttpAndStdout) {
    Uri h = parse_uri("HTTPS://hooks.example.com:8443/in/orders?x=1");
    EXPECT_EQ(h.scheme, "https");
    EXPECT_EQ(h.hosts, "hooks.example.com:8443");
    EXPECT_EQ(h.path, "/in/orders");
    Uri s = parse_uri("stdout:");
    EXPECT_EQ(s.scheme, "stdout");
    EXPECT_TRUE(s.hosts.empty());
    EXPECT_THROW(parse_uri("no-scheme-here"), std::invalid_argument);
    EXPECT_THROW(parse_uri(":x"), std::invalid_argument);
}

TEST(Uri, WithoutParamsForLibpq) {
    Uri u = parse_uri("postgresql://relay@db1:5432,db2:5432/shop?source=orders&target_session_attrs=read-write");
    EXPECT_EQ(u.param("source"), "orders");
    EXPECT_EQ(u.without_params({"source"}), "postgresql://relay@db1:5432,db2:5432/shop?target_session_attrs=read-write");
}

TEST(Uri, RedactsPasswordsAndSecrets) {
    EXPECT_EQ(redact_uri("postgresql://u:hunter2@h/db"), "postgresql://u:***@h/db");
    EXPECT_EQ(redact_uri("https://h/p?token=abc&x=1"), "https://h/p?token=***&x=1");
    EXPECT_EQ(redact_uri("postgresql://h/db?password=pw&sslmode=require"), "postgresql://h/db?password=***&sslmode=require");
    EXPECT_EQ(redact_uri("stdout:"), "stdout:");
    std::string r = redact_uri("nats://a:b@h:4222?stream=S");
    EXPECT_EQ(r.find("b@"), std::string::npos) << r;
}

TEST(Uri, RedactsKeywordConninfo) {
    EXPECT_EQ(redact_conninfo("host=a password=hunter2 dbname=x"), "host=a password=*** dbname=x");
    EXPECT_EQ(redact_conninfo("password = 'it\\'s secret' host=b"), "password = *** host=b");
    EXPECT_EQ(redact_conninfo("host=a,b target_session_attrs=read-write"), "host=a,b target_session_attrs=read-write");
    EXPECT_EQ(redact_conninfo("postgres://u:pw@h/db"), "postgres://u:***@h/db");
    std::string r = redact_conninfo("host=a sslpassword=zzz");
    EXPECT_EQ(r.find("zzz"), std::string::npos);
}

TEST(Uri, PercentCoding) {
    EXPECT_EQ(percent_decode("a%20b%2Fc"), "a b/c");
    EXPECT_EQ(percent_decode("100%"), "100%");
    EXPECT_EQ(percent_encode("a b/c"), "a%20b%2Fc");
    EXPECT_EQ(percent_decode(percent_encode("a b/é&=")), "a b/é&=");
}

// Every form of secret a sink URI can carry, each redacted.
TEST(Uri, RedactsNatsTokenAndUserPassword) {
    EXPECT_EQ(redact_uri("nats://s3cr3tT0ken@127.0.0.1:4222?stream=S"), "nats://***@127.0.0.1:4222?stream=S");
    EXPECT_EQ(redact_uri("nats://alice:pa55@a:4222,b:4222?stream=S"), "nats://alice:***@a:4222,b:4222?stream=S");
    EXPECT_EQ(redact_uri("https://apikey123@hooks.example.com/in"), "https://***@hooks.example.com/in");
    EXPECT_EQ(redact_uri("https://user:pw@hooks.example.com/in"), "https://user:***@hooks.example.com/in");
    // A libpq user without a password is the role name, not a secret.
    EXPECT_EQ(redact_uri("postgresql://relay@db/shop"), "postgresql://relay@db/shop");
}

TEST(Uri, RedactsSecretQueryParameters) {
    for (const char* name : {"api_key", "apikey", "API-KEY", "sig", "token", "code", "secret", "password", "access_token",
                             "key", "signature", "X-Amz-Signature", "X-Amz-Credential", "client_secret", "auth",
                             "sslpassword", "refresh_token"}) {
        std::string uri = std::string("https://h/p?") + name + "=TOPSECRET&x=1";
        std::string r = redact_uri(uri);
        EXPECT_EQ(r.find("TOPSECRET"), std::string::npos) << r;
        EXPECT_NE(r.find("x=1"), std::string::npos) << r;   // harmless parameters stay readable
    }
    EXPECT_EQ(redact_uri("nats://h:4222?stream=ORDERS&subject_prefix=once.&create_stream=1"),
              "nats://h:4222?stream=ORDERS&subject_prefix=once.&create_stream=1");
}

TEST(Uri, RedactsSecretPathSegmentsAndFragments) {
    EXPECT_EQ(redact_uri("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX1"),
              "https://hooks.slack.com/services/T00000000/B00000000/***");
    std::string discord = "https://discord.com/api/webhooks/123456789012345678/"
                          "abcDEFghiJKLmnoPQRstuVWXyz0123456789abcDEFghiJKLmnoPQRstuVWXyz01234567";
    EXPECT_EQ(redact_uri(discord), "https://discord.com/api/webhooks/123456789012345678/***");
    EXPECT_EQ(redact_uri("https://h/in/orders/v2"), "https://h/in/orders/v2");   // ordinary words stay
    std::string r = redact_uri("https://h/cb#access_token=TOPSECRET");
    EXPECT_EQ(r.find("TOPSECRET"), std::string::npos) << r;
}

TEST(Uri, RedactsSecretConninfoKeywords) {
    std::string r = redact_conninfo("host=a sslpassword=TOPSECRET dbname=x");
    EXPECT_EQ(r.find("TOPSECRET"), std::string::npos) << r;
    EXPECT_EQ(redact_conninfo("postgresql://u@h/db?password=TOPSECRET"), "postgresql://u@h/db?password=***");
}
