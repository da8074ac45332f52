#include "options.hpp"
#include "sinks/sink.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
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

struct TempFile {
    std::string path;
    explicit TempFile(const std::string& text) {
        char name[] = "/tmp/once-relay-test-XXXXXX";
        int fd = mkstemp(name);
        close(fd);
        path = name;
        std::ofstream(path) << text;
    }
    ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace

TEST(Options, Defaults) {
    Options o = parse({"--db", "dbname=x", "--sink", "stdout:"});
    EXPECT_EQ(o.db, "dbname=x");
    EXPECT_EQ(o.sink, "stdout:");
    EXPECT_EQ(o.name, "once-relay");
    EXPECT_EQ(o.batch, 100);
    EXPECT_EQ(o.lease, Millis(30000));
    EXPECT_EQ(o.poll_interval, Millis(1000));
    EXPECT_TRUE(o.maintenance);
    EXPECT_TRUE(o.topics.empty());
    EXPECT_EQ(o.log_level, "info");
}

TEST(Options, AllOnCommandLine) {
    Options o = parse({"--db", "host=a,b target_session_attrs=read-write", "--sink", "nats://127.0.0.1:4222?stream=S",
                       "--name", "relay-1", "--topics", "order.*, payment.>", "--batch", "500", "--lease", "2min",
                       "--poll-interval", "200ms", "--max-in-flight", "64", "--metrics", "127.0.0.1:9187",
                       "--log-level", "debug", "--maintenance", "off", "--sink-timeout", "3s"});
    EXPECT_EQ(o.name, "relay-1");
    ASSERT_EQ(o.topics.size(), 2u);
    EXPECT_EQ(o.topics[0], "order.*");
    EXPECT_EQ(o.topics[1], "payment.>");
    EXPECT_EQ(o.batch, 500);
    EXPECT_EQ(o.lease, Millis(120000));
    EXPECT_EQ(o.poll_interval, Millis(200));
    EXPECT_EQ(o.max_in_flight, 64);
    EXPECT_EQ(o.metrics, "127.0.0.1:9187");
    EXPECT_FALSE(o.maintenance);
    EXPECT_EQ(o.sink_timeout, Millis(3000));
}

TEST(Options, ConfigFileAndCommandLineWins) {
    TempFile f("# comment\ndb = dbname=fromfile\nsink = stdout:\nbatch = 250\nlease = 10s\ntopics = a.*\n");
    Options o = parse({"--config", f.path, "--batch", "7"});
    EXPECT_EQ(o.db, "dbname=fromfile");
    EXPECT_EQ(o.batch, 7);            // command line wins
    EXPECT_EQ(o.lease, Millis(10000));  // from the file
    ASSERT_EQ(o.topics.size(), 1u);
    EXPECT_EQ(o.config, f.path);
}

TEST(Options, ConfigFileErrors) {
    TempFile unknown("db = x\nsink = stdout:\nbogus = 1\n");
    EXPECT_NE(error_of({"--config", unknown.path}).find("bogus"), std::string::npos);
    EXPECT_NE(error_of({"--config", "/nonexistent/relay.conf"}).find("cannot read config file"), std::string::npos);
}

TEST(Options, HelpAndVersionNeedNothingElse) {
    EXPECT_TRUE(parse({"--help"}).show_help);
    EXPECT_TRUE(parse({"--version"}).show_version);
    EXPECT_TRUE(parse({"--db", "x", "--sink", "stdout:", "--check-config"}).check_config);
}

TEST(Options, ClearErrors) {
    EXPECT_NE(error_of({"--sink", "stdout:"}).find("--db is required"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x"}).find("--sink is required"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--batch", "0"}).find("--batch 0"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--batch", "many"}).find("batch"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--lease", "30"}).find("unit is missing"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--lease", "500ms"}).find("shorter than 1s"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--log-level", "loud"}).find("loud"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--maintenance", "maybe"}).find("on or off"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--metrics", "9187"}).find("host:port"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--name", "a b"}).find("--name"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--frobnicate"}).find("frobnicate"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--synchronous-commit", "maybe"}).find("--synchronous-commit"), std::string::npos);
    EXPECT_EQ(parse({"--db", "x", "--sink", "stdout:", "--synchronous-commit", "remote_apply"}).synchronous_commit, "remote_apply");
    EXPECT_EQ(parse({"--db", "x", "--sink", "stdout:"}).synchronous_commit, "off");
}

TEST(Options, TopicPatternsAreValidatedWithTheCoreRules) {
    EXPECT_NO_THROW(parse({"--db", "x", "--sink", "stdout:", "--topics", "order.*,order.>,a.b.c"}));
    for (const char* bad : {"order.>.x", "order..x", "ord*er", "a b"})
        EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--topics", bad}).find("--topics"), std::string::npos) << bad;
}

TEST(Options, RestartOnlyChanges) {
    Options a = parse({"--db", "x", "--sink", "stdout:"});
    Options b = a;
    b.batch = 5;
    b.lease = Millis(5000);
    EXPECT_TRUE(restart_only_changes(a, b).empty());
    b.db = "y";
    b.sink = "http://127.0.0.1/";
    auto r = restart_only_changes(a, b);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0], "db");
    EXPECT_EQ(r[1], "sink");
}

TEST(Options, ReloadKeepsTheRunningRestartOnlySettings) {
    Options running = parse({"--db", "x", "--sink", "stdout:", "--connect-timeout", "2s"});
    Options fresh = parse({"--db", "y", "--sink", "stdout:", "--connect-timeout", "3s", "--batch", "7"});
    auto changed = keep_restart_only(running, fresh);
    EXPECT_EQ(changed, (std::vector<std::string>{"db", "connect-timeout"}));
    EXPECT_EQ(fresh.db, "x");
    EXPECT_EQ(fresh.connect_timeout, Millis(2000));
    EXPECT_EQ(fresh.batch, 7);   // reloadable settings take the new value
    EXPECT_TRUE(restart_only_changes(running, fresh).empty());
}

TEST(Options, ClaimMode) {
    EXPECT_EQ(parse({"--db", "x", "--sink", "stdout:"}).claim_mode, "auto");
    EXPECT_EQ(parse({"--db", "x", "--sink", "stdout:", "--claim-mode", "leased"}).claim_mode, "leased");
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--claim-mode", "lazy"}).find("--claim-mode \"lazy\""),
              std::string::npos);
    TempFile f("db = x\nsink = stdout:\nclaim-mode = locked\n");
    EXPECT_EQ(parse({"--config", f.path}).claim_mode, "locked");
    // auto: what the sink asks for: locked for the sinks that answer fast, leased for http(s)
    // (answers as slow as a lease). The sink declares it; nothing matches its URI's text.
    for (const char* uri : {"nats://127.0.0.1:4222?stream=S", "postgresql://u@/db", "stdout:"}) {
        Options o = parse({"--db", "x", "--sink", uri});
        EXPECT_EQ(resolve_claim_mode(o.claim_mode, make_sink(o)->preferred_claim_mode()), ClaimMode::locked) << uri;
    }
    for (const char* uri : {"http://127.0.0.1:9/hook", "https://example.com/hook"}) {
        Options o = parse({"--db", "x", "--sink", uri});
        EXPECT_EQ(resolve_claim_mode(o.claim_mode, make_sink(o)->preferred_claim_mode()), ClaimMode::leased) << uri;
    }
    EXPECT_EQ(resolve_claim_mode("locked", ClaimMode::leased), ClaimMode::locked);
    EXPECT_EQ(resolve_claim_mode("leased", ClaimMode::locked), ClaimMode::leased);
    // the connections are set up once: a reload keeps the running mode
    Options running = parse({"--db", "x", "--sink", "stdout:"});
    Options fresh = parse({"--db", "x", "--sink", "stdout:", "--claim-mode", "leased"});
    EXPECT_EQ(keep_restart_only(running, fresh), (std::vector<std::string>{"claim-mode"}));
    EXPECT_EQ(fresh.claim_mode, "auto");
}

TEST(Options, SplitList) {
    EXPECT_EQ(split_list(" a.* , ,b.> ,"), (std::vector<std::string>{"a.*", "b.>"}));
    EXPECT_TRUE(split_list("").empty());
}

TEST(Options, WalTransportOptions) {
    Options d = parse({"--db", "dbname=x", "--sink", "stdout:"});
    EXPECT_EQ(d.transport, "table");
    EXPECT_EQ(d.wal_slot, "once_relay");
    EXPECT_EQ(d.wal_publication, "once_outbox");
    Options w = parse({"--db", "dbname=x", "--sink", "stdout:", "--transport", "wal", "--wal-slot", "relays_a",
                       "--wal-publication", "pub_a"});
    EXPECT_EQ(w.transport, "wal");
    EXPECT_EQ(w.wal_slot, "relays_a");
    EXPECT_EQ(w.wal_publication, "pub_a");
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--transport", "kafka"}).find("--transport \"kafka\""),
              std::string::npos);
    EXPECT_NE(error_of({"--db", "x", "--sink", "stdout:", "--wal-slot", "Bad-Name"}).find("--wal-slot \"Bad-Name\""),
              std::string::npos);
    // A relay group serves its topics from its own slot (the stream passes over the others).
    EXPECT_EQ(parse({"--db", "x", "--sink", "stdout:", "--transport", "wal", "--topics", "a.*"}).topics,
              std::vector<std::string>{"a.*"});
    // The slot commands need no sink, and only one of them at a time.
    Options c = parse({"--db", "dbname=x", "--create-wal-slot"});
    EXPECT_TRUE(c.create_wal_slot);
    EXPECT_TRUE(parse({"--db", "dbname=x", "--drop-wal-slot"}).drop_wal_slot);
    EXPECT_NE(error_of({"--db", "x", "--create-wal-slot", "--drop-wal-slot"}).find("choose one"), std::string::npos);
    EXPECT_NE(error_of({"--db", "x"}).find("--sink is required"), std::string::npos);
    EXPECT_EQ(restart_only_changes(d, w), (std::vector<std::string>{"transport", "wal-slot", "wal-publication"}));
    EXPECT_FALSE(w.wal_accept_slot_loss_on_failover) << "refusing is the default";
    Options a = parse({"--db", "x", "--sink", "stdout:", "--transport", "wal", "--wal-accept-slot-loss-on-failover"});
    EXPECT_TRUE(a.wal_accept_slot_loss_on_failover);
    Options w2 = w;
    w2.wal_accept_slot_loss_on_failover = true;
    EXPECT_EQ(restart_only_changes(w, w2), (std::vector<std::string>{"wal-accept-slot-loss-on-failover"}));
}
