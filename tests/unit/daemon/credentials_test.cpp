#include "credentials.hpp"
#include "options.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
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

std::string all(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += x + "\n";
    return s;
}

}  // namespace

TEST(Credentials, PasswordOnTheCommandLineIsWarnedAboutNeverShown) {
    auto w = command_line_secret_warnings(parse({"--db", "host=h dbname=d password=hunter2-secret", "--sink", "stdout:"}));
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("--db holds a password"), std::string::npos);
    EXPECT_NE(w[0].find("LoadCredential=pgpass"), std::string::npos);
    EXPECT_EQ(all(w).find("hunter2"), std::string::npos);

    w = command_line_secret_warnings(parse({"--db", "postgresql://u:hunter2-secret@h/d", "--sink", "stdout:"}));
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(all(w).find("hunter2"), std::string::npos);

    w = command_line_secret_warnings(parse({"--db", "dbname=d", "--sink", "nats://s3cr3t-token@127.0.0.1:4222?stream=S"}));
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("NATS token"), std::string::npos);
    EXPECT_NE(w[0].find("nats-token"), std::string::npos);
    EXPECT_EQ(all(w).find("s3cr3t"), std::string::npos);

    w = command_line_secret_warnings(parse({"--db", "dbname=d", "--sink", "https://u:pw-s3cr3t@h/hook"}));
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(all(w).find("s3cr3t"), std::string::npos);

    EXPECT_TRUE(command_line_secret_warnings(parse({"--db", "host=h dbname=d user=u", "--sink", "nats://127.0.0.1?stream=S"})).empty());
}

TEST(Credentials, ConfigFileSecretsAreNotCommandLineSecrets) {
    std::string path = ::testing::TempDir() + "/relay-cred.conf";
    {
        std::ofstream f(path);
        f << "db = host=h dbname=d password=in-the-file\nsink = nats://tok@127.0.0.1?stream=S\n";
    }
    Options o = parse({"--config", path});
    EXPECT_FALSE(o.db_from_command_line);
    EXPECT_TRUE(command_line_secret_warnings(o).empty());
    std::remove(path.c_str());
}

TEST(Credentials, SecretFilesAndCloudEventsOptions) {
    Options o = parse({"--db", "dbname=d", "--sink", "http://h/x", "--webhook-secret-file", "/a",
                       "--webhook-secret-file", "/b", "--cloudevents", "on", "--cloudevents-source", "urn:x"});
    EXPECT_EQ(o.webhook_secret_files, (std::vector<std::string>{"/a", "/b"}));
    EXPECT_TRUE(o.cloudevents);
    EXPECT_EQ(o.cloudevents_source, "urn:x");
    EXPECT_THROW(parse({"--db", "dbname=d", "--sink", "http://h/x", "--cloudevents-source", "urn:x"}), std::runtime_error);
    // There is no option that takes a secret itself.
    // (--webhook-secret would be taken as an abbreviation of --webhook-secret-file.)
    try {
        parse({"--db", "dbname=d", "--sink", "http://h/x", "--webhook-secret", "whsec_s3cr3t"});
        ADD_FAILURE() << "a secret on the command line was accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("not the secret itself"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find("s3cr3t"), std::string::npos) << e.what();
    }
    Options running = o;
    Options fresh = o;
    fresh.webhook_secret_files = {"/c"};
    EXPECT_EQ(keep_restart_only(running, fresh), std::vector<std::string>{"webhook-secret-file"});
}

TEST(Credentials, CredentialPathNeedsTheDirectoryAndTheFile) {
    std::string dir = ::testing::TempDir() + "/creds-test";
    std::system(("mkdir -p " + dir).c_str());
    { std::ofstream f(dir + "/nats-token"); f << "t\n"; }
    unsetenv("CREDENTIALS_DIRECTORY");
    EXPECT_EQ(credential_path("nats-token"), std::nullopt);
    setenv("CREDENTIALS_DIRECTORY", dir.c_str(), 1);
    EXPECT_EQ(credential_path("nats-token"), dir + "/nats-token");
    EXPECT_EQ(credential_path("webhook-secret"), std::nullopt);
    unsetenv("CREDENTIALS_DIRECTORY");
    std::system(("rm -rf " + dir).c_str());
}
