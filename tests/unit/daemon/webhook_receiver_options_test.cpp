#include "options.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace once::relay;

namespace {

Options parse(std::vector<std::string> args) {
    args.insert(args.begin(), "once-relay");
    std::vector<const char*> argv;
    for (auto& a : args) argv.push_back(a.c_str());
    return parse_options(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
    try {
        parse(std::move(args));
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(WebhookReceiverOptions, DefaultsAndValues) {
    auto o = parse({"--db", "dbname=x", "--listen-webhooks", "127.0.0.1:8080", "--webhooks-secret-file", "/run/s"});
    EXPECT_EQ(o.listen_webhooks, "127.0.0.1:8080");
    EXPECT_TRUE(o.sink.empty());   // no --sink needed
    EXPECT_EQ(o.webhooks_max_body, 1048576u);
    EXPECT_EQ(o.webhooks_concurrency, 64);
    EXPECT_EQ(o.webhooks_tolerance, Millis(300000));
    EXPECT_EQ(o.webhooks_source, "");
    o = parse({"--db", "dbname=x", "--listen-webhooks", "[::1]:0", "--webhooks-secret-file", "/a",
               "--webhooks-secret-file", "/b", "--webhooks-source", "stripe", "--webhooks-max-body", "4096",
               "--webhooks-concurrency", "8", "--webhooks-tolerance", "30s"});
    EXPECT_EQ(o.webhooks_secret_files, (std::vector<std::string>{"/a", "/b"}));
    EXPECT_EQ(o.webhooks_source, "stripe");
    EXPECT_EQ(o.webhooks_max_body, 4096u);
    EXPECT_EQ(o.webhooks_concurrency, 8);
    EXPECT_EQ(o.webhooks_tolerance, Millis(30000));
}

TEST(WebhookReceiverOptions, Refusals) {
    const std::vector<std::string> base{"--db", "dbname=x", "--listen-webhooks", "127.0.0.1:8080"};
    auto with = [&](std::vector<std::string> more) {
        auto a = base;
        a.insert(a.end(), more.begin(), more.end());
        return error_of(a);
    };
    EXPECT_NE(with({"--sink", "stdout:"}).find("--listen-webhooks and --sink"), std::string::npos);
    EXPECT_NE(with({"--webhook-secret-file", "/s"}).find("--webhooks-secret-file"), std::string::npos);
    EXPECT_NE(with({"--webhooks-secret-file", "whsec_abc"}).find("not the secret itself"), std::string::npos);
    EXPECT_NE(with({"--webhooks-max-body", "0"}).find("--webhooks-max-body"), std::string::npos);
    EXPECT_NE(with({"--webhooks-concurrency", "0"}).find("--webhooks-concurrency"), std::string::npos);
    EXPECT_NE(with({"--webhooks-tolerance", "2h"}).find("--webhooks-tolerance"), std::string::npos);
    EXPECT_NE(with({"--webhooks-source", std::string(300, 's')}).find("--webhooks-source"), std::string::npos);
    EXPECT_NE(error_of({"--db", "dbname=x", "--listen-webhooks", "8080"}).find("host:port"), std::string::npos);
    EXPECT_NE(error_of({"--db", "dbname=x", "--listen-webhooks", "127.0.0.1:99999"}).find("host:port"), std::string::npos);
    EXPECT_NE(error_of({"--db", "dbname=x", "--sink", "stdout:", "--webhooks-source", "s"}).find("need --listen-webhooks"),
              std::string::npos);
}
