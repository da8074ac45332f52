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
    EXPECT_TRUE(u.has_param("create_stream"));
    EXPECT_FALSE(u.has_param("nope"));
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
}
