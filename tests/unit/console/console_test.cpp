#include "auth.hpp"
#include "console_options.hpp"
#include "diagram.hpp"
#include "html.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

using namespace once::console;

TEST(Secret, HashVerifies) {
    std::string h = hash_secret("correct horse battery", 1000);
    EXPECT_EQ(h.rfind("pbkdf2-sha256$1000$", 0), 0u);
    EXPECT_TRUE(verify_secret("correct horse battery", h));
    EXPECT_FALSE(verify_secret("correct horse batterY", h));
    EXPECT_FALSE(verify_secret("", h));
    EXPECT_NE(hash_secret("same", 1000), hash_secret("same", 1000));   // salted
}

TEST(Secret, MalformedHashesNeverVerify) {
    for (const char* bad : {"", "plain", "pbkdf2-sha256$10$00$00", "pbkdf2-sha256$1000$zz$00",
                            "pbkdf2-sha1$1000$00$00", "pbkdf2-sha256$1000$00$0011"})
        EXPECT_FALSE(verify_secret("x", bad)) << bad;
}

TEST(Secret, RandomTokens) {
    std::string a = random_token(), b = random_token();
    EXPECT_EQ(a.size(), 64u);
    EXPECT_NE(a, b);
    EXPECT_TRUE(constant_time_equal(a, a));
    EXPECT_FALSE(constant_time_equal(a, b));
    EXPECT_FALSE(constant_time_equal(a, a.substr(1)));
}

namespace {
std::string write_file(const std::string& text, mode_t mode) {
    char path[] = "/tmp/console-creds-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    std::ofstream(path) << text;
    chmod(path, mode);
    return path;
}
}  // namespace

TEST(Credentials, ReadsUsersAndRefusesBadFiles) {
    std::string h = hash_secret("secret-secret", 1000);
    auto ok = write_file("# users\nalice admin " + h + "\n\nbob viewer " + h + "  # on call\n", 0600);
    auto users = load_credentials(ok);
    ASSERT_EQ(users.size(), 2u);
    EXPECT_EQ(users["alice"].role, Role::admin);
    EXPECT_EQ(users["bob"].role, Role::viewer);
    EXPECT_TRUE(verify_secret("secret-secret", users["bob"].hash));
    std::remove(ok.c_str());

    auto readable = write_file("alice admin " + h + "\n", 0644);
    EXPECT_THROW(load_credentials(readable), std::runtime_error);
    std::remove(readable.c_str());
    for (std::string bad : std::vector<std::string>{"alice root " + h, "alice admin", "alice admin plaintext", "a admin " + h + "\na viewer " + h, ""}) {
        auto f = write_file(bad + "\n", 0600);
        EXPECT_THROW(load_credentials(f), std::runtime_error) << bad;
        std::remove(f.c_str());
    }
}

TEST(Sessions, CsrfAndFlash) {
    Sessions s(std::chrono::minutes(1));
    std::string id = s.create("alice", Role::admin);
    auto found = s.find(id);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->user, "alice");
    EXPECT_EQ(found->csrf.size(), 64u);
    EXPECT_NE(found->csrf, id);
    EXPECT_FALSE(s.find(id.substr(0, 63) + "x"));
    s.set_flash(id, "done");
    EXPECT_EQ(s.take_flash(id), "done");
    EXPECT_EQ(s.take_flash(id), "");
    s.erase(id);
    EXPECT_FALSE(s.find(id));
}

TEST(Html, EscapesAndForms) {
    EXPECT_EQ(esc("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    auto f = parse_form("id=1&id=2&op=redrive&csrf=a%2Bb&note=two+words&empty=");
    EXPECT_EQ(f["id"], (std::vector<std::string>{"1", "2"}));
    EXPECT_EQ(f["csrf"][0], "a+b");
    EXPECT_EQ(f["note"][0], "two words");
    EXPECT_EQ(f["empty"][0], "");
    EXPECT_TRUE(is_uuid("01a21602-6e35-712b-89aa-51e86b731593"));
    EXPECT_FALSE(is_uuid("01a21602-6e35-712b-89aa-51e86b73159'"));
    EXPECT_FALSE(is_uuid("01a21602x6e35-712b-89aa-51e86b731593"));
}

TEST(Options, DefaultsAndRefusals) {
    const char* ok[] = {"once-console", "--db", "dbname=x", "--credentials", "/etc/u"};
    Options o = parse_options(5, ok);
    EXPECT_EQ(o.listen, "127.0.0.1:8086");
    EXPECT_EQ(o.threads, 4);
    const char* no_creds[] = {"once-console", "--db", "dbname=x"};
    EXPECT_THROW(parse_options(3, no_creds), std::runtime_error);
    const char* bad_listen[] = {"once-console", "--db", "x", "--credentials", "u", "--listen", "8086"};
    EXPECT_THROW(parse_options(7, bad_listen), std::runtime_error);
    const char* secret_flag[] = {"once-console", "--db", "x", "--credentials", "u", "--password", "p"};
    EXPECT_THROW(parse_options(7, secret_flag), std::runtime_error);   // no such option
}

TEST(Options, ConnectionAndLoginLimits) {
    const char* base[] = {"once-console", "--db", "dbname=x", "--credentials", "/etc/u"};
    Options o = parse_options(5, base);
    EXPECT_EQ(o.max_connections, 256);
    EXPECT_EQ(o.max_connections_per_address, 16);
    EXPECT_EQ(o.request_timeout, std::chrono::milliseconds(10000));
    EXPECT_EQ(o.login_failures, 10);
    EXPECT_EQ(o.login_failure_window, std::chrono::milliseconds(600000));
    const char* set[] = {"once-console", "--db", "x", "--credentials", "u", "--max-connections", "64",
                         "--max-connections-per-address", "8", "--request-timeout", "3s", "--login-failures", "5",
                         "--login-failure-window", "1min"};
    o = parse_options(15, set);
    EXPECT_EQ(o.max_connections, 64);
    EXPECT_EQ(o.max_connections_per_address, 8);
    EXPECT_EQ(o.request_timeout, std::chrono::milliseconds(3000));
    EXPECT_EQ(o.login_failures, 5);
    EXPECT_EQ(o.login_failure_window, std::chrono::milliseconds(60000));
    // One address may not take every connection; no limit may be switched off.
    const char* per_address_all[] = {"once-console", "--db", "x", "--credentials", "u", "--max-connections", "16",
                                     "--max-connections-per-address", "16"};
    EXPECT_THROW(parse_options(9, per_address_all), std::runtime_error);
    const char* no_deadline[] = {"once-console", "--db", "x", "--credentials", "u", "--request-timeout", "0s"};
    EXPECT_THROW(parse_options(7, no_deadline), std::runtime_error);
    const char* no_budget[] = {"once-console", "--db", "x", "--credentials", "u", "--login-failures", "0"};
    EXPECT_THROW(parse_options(7, no_budget), std::runtime_error);
    const char* no_room[] = {"once-console", "--db", "x", "--credentials", "u", "--max-connections", "1"};
    EXPECT_THROW(parse_options(7, no_room), std::runtime_error);
}

TEST(Diagram, PathAndRendering) {
    std::vector<DiagramStep> steps{{"reserve", "compensable", "topic stock.reserve", "topic stock.release", 3},
                                   {"pay", "pivot", "topic pay", "topic refund", 3},
                                   {"notify", "retriable", "topic notify", "", 0}};
    DiagramPath path;
    path.nodes = {"start", "reserve", "pay", "undo_reserve"};
    path.edges = {{"start", "reserve"}, {"reserve", "pay"}, {"pay", "undo_reserve"}};
    path.current = "undo_reserve";
    std::string dot = saga_dot(steps, path);
    EXPECT_NE(dot.find("\"pay\" -> \"undo_reserve\" [label=\"failed\", color=\"#2b6cb0\""), std::string::npos) << dot;
    EXPECT_NE(dot.find("\"reserve\" -> \"undo_reserve\" [label=\"timed out 3x\"]"), std::string::npos) << dot;
    EXPECT_NE(dot.find("\"notify\" -> \"notify\""), std::string::npos);
    EXPECT_EQ(dot.find("undo_notify"), std::string::npos);
    std::string svg = render_svg(dot);
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);
    EXPECT_NE(svg.find("width=\"100%\""), std::string::npos);
    EXPECT_NE(svg.find("id=\"node_undo_reserve\""), std::string::npos);
    // a step name with quotes cannot break out of the DOT string
    std::vector<DiagramStep> odd{{"a\"b", "compensable", "topic x", "", 1}};
    EXPECT_NO_THROW(render_svg(saga_dot(odd, {})));
}
