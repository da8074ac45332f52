// The relay loop itself (Relay::run), with a fake outbox behind the leased claim mode and a
// fake sink that answers at once: claims, per-key order, settlement and stopping, with no
// database and no network. The loop stops on SIGTERM, which the fake outbox raises once every
// message it handed out has been settled (signals reach the loop through a signalfd, as in the
// daemon).
#include "metrics.hpp"
#include "options.hpp"
#include "outbox/outbox_session.hpp"
#include "relay.hpp"
#include "signals.hpp"
#include "sinks/sink.hpp"
#include "systemd_notify.hpp"
#include "test_fakes.hpp"
#include "wal_fakes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <deque>
#include <set>

using namespace once::relay;
using once::relay::testing::msg;

namespace {

// An outbox that hands out the batches the test gives it, records every settlement, and
// raises SIGTERM when all it handed out is settled (or when the loop claims far too often).
class FakeOutbox final : public OutboxSession {
public:
    void connect() override { up_ = true; }
    void disconnect() override { up_ = false; }
    bool connected() const override { return up_; }
    int socket() const override { return -1; }
    std::string server() const override { return "fake:0"; }
    const std::string& redacted_conninfo() const override { return conninfo_; }
    bool consume_wakeups() override { return false; }
    bool try_maintenance_lock() override { return false; }
    int64_t purge() override { return 0; }
    void saga_tick() override {}
    std::optional<WaitingCount> waiting_messages(const std::string& = {}) override { return std::nullopt; }

    std::vector<Message> claim(int, Millis, const std::vector<std::string>&) override {
        if (++claims > 1000) std::raise(SIGTERM);   // a loop that never settles: end the test
        if (batches.empty()) return {};
        auto b = std::move(batches.front());
        batches.pop_front();
        handed_out += b.size();
        return b;
    }
    int64_t ack(const std::vector<std::string>& ids) override {
        acks.insert(acks.end(), ids.begin(), ids.end());
        settled(ids.size());
        return static_cast<int64_t>(ids.size());
    }
    std::string nack(const std::string& id, const std::string&, std::optional<Millis>) override {
        nacks.push_back(id);
        settled(1);
        return "retry";
    }
    void dead(const std::string& id, const std::string&) override {
        deads.push_back(id);
        settled(1);
    }
    void extend(const std::vector<std::string>&, Millis) override {}

    std::deque<std::vector<Message>> batches;
    int claims = 0;
    size_t handed_out = 0;
    std::vector<std::string> acks, nacks, deads;

private:
    void settled(size_t n) {
        settled_ += n;
        if (batches.empty() && settled_ == handed_out) std::raise(SIGTERM);
    }
    bool up_ = false;
    size_t settled_ = 0;
    std::string conninfo_ = "fake";
};

// A sink that answers everything at its next process(): delivered, except the ids the test
// lists as failing. It logs submissions and answers in the order they happen.
class AnsweringSink final : public Sink {
public:
    explicit AnsweringSink(std::vector<std::string>& log, std::set<std::string> failing)
        : log_(log), failing_(std::move(failing)) {}
    const char* kind() const override { return "fake"; }
    std::string describe() const override { return "fake:"; }
    ClaimMode preferred_claim_mode() const override { return ClaimMode::leased; }
    void open() override {}
    bool ready() override { return true; }
    void submit(uint64_t token, const Message& m) override {
        log_.push_back("submit " + m.id);
        open_.push_back({token, m.id});
    }
    void poll_fds(std::vector<pollfd>&) override {}
    int poll_timeout_ms() override { return open_.empty() ? -1 : 0; }
    void process(const pollfd*, size_t, std::vector<Outcome>& out) override {
        for (auto& [token, id] : open_) {
            log_.push_back("answer " + id);
            bool fail = failing_.count(id) > 0;
            out.push_back(Outcome{token, fail ? Verdict::retry : Verdict::delivered, fail ? "503" : "", std::nullopt});
        }
        open_.clear();
    }
    size_t in_flight() const override { return open_.size(); }
    void abandon(std::vector<Outcome>& out) override { process(nullptr, 0, out); }

private:
    std::vector<std::string>& log_;
    std::set<std::string> failing_;
    std::vector<std::pair<uint64_t, std::string>> open_;
};

Options loop_options() {
    Options o;
    o.db = "fake";
    o.sink = "fake:";
    o.claim_mode = "leased";
    o.poll_interval = Millis(10);
    o.maintenance = false;
    return o;
}

size_t position(const std::vector<std::string>& log, const std::string& entry) {
    for (size_t i = 0; i < log.size(); ++i)
        if (log[i] == entry) return i;
    ADD_FAILURE() << entry << " never happened";
    return log.size();
}

}  // namespace

TEST(RelayLoop, ClaimsPublishesInKeyOrderSettlesAndStops) {
    block_relay_signals();
    SignalFd signals;
    SystemdNotifier notifier;
    Metrics metrics;
    std::vector<std::string> log;
    auto outbox = std::make_unique<FakeOutbox>();
    FakeOutbox& db = *outbox;
    db.batches.push_back({msg("a1", "k"), msg("a2", "k"), msg("b1")});
    db.batches.push_back({msg("c1", "j")});
    Relay::Wiring wiring;
    wiring.db = std::move(outbox);   // no claim connection: claims go to the fake outbox
    Relay relay(loop_options(), [] { return loop_options(); }, std::make_unique<AnsweringSink>(log, std::set<std::string>{"b1"}),
                metrics, signals, notifier, std::move(wiring));

    EXPECT_EQ(relay.run(), 0);

    std::multiset<std::string> acked(db.acks.begin(), db.acks.end());
    EXPECT_EQ(acked, (std::multiset<std::string>{"a1", "a2", "c1"}));   // each once
    EXPECT_EQ(db.nacks, (std::vector<std::string>{"b1"}));               // the sink's failure, given back
    EXPECT_TRUE(db.deads.empty());
    EXPECT_LT(position(log, "answer a1"), position(log, "submit a2"));   // a key's next waits for its answer
    EXPECT_LT(position(log, "submit b1"), position(log, "answer a1"));   // other keys do not wait
    EXPECT_EQ(metrics.acked.load(), 3u);
    EXPECT_EQ(metrics.nacked.load(), 1u);
    EXPECT_EQ(metrics.batches.load(), 2u);
    EXPECT_GE(db.claims, 3);                                             // until a claim came back empty
    EXPECT_LT(db.claims, 1000);
}

TEST(RelayLoop, LockedLanesSettleEachBatchWithItsCommit) {
    block_relay_signals();
    SignalFd signals;
    SystemdNotifier notifier;
    Metrics metrics;
    std::vector<std::string> log;
    once::relay::testing::TxLog tx;
    std::deque<std::vector<Message>> answers{{msg("a1", "k"), msg("a2", "k")}, {msg("b1", "j")}};
    const size_t total = 3;
    tx.on_commit = [&] {
        if (tx.acks.size() + tx.nacks.size() == total) std::raise(SIGTERM);
    };
    Relay::Wiring wiring;
    wiring.db = std::make_unique<FakeOutbox>();   // LISTEN only: the lanes claim and settle
    wiring.locked_tx = [&] { return std::make_unique<once::relay::testing::FakeTx>(tx, answers, true); };
    Options o = loop_options();
    o.claim_mode = "locked";
    Relay relay(o, [o] { return o; }, std::make_unique<AnsweringSink>(log, std::set<std::string>{"b1"}), metrics, signals,
                notifier, std::move(wiring));

    EXPECT_EQ(relay.run(), 0);

    EXPECT_EQ(tx.commits, 2);                                    // one COMMIT per batch
    EXPECT_EQ(tx.acks, (std::vector<std::string>{"a1", "a2"}));
    EXPECT_EQ(tx.nacks, (std::vector<std::string>{"b1"}));       // in the same transaction as its batch
    EXPECT_LT(position(log, "answer a1"), position(log, "submit a2"));
    EXPECT_EQ(metrics.acked.load(), 2u);
    EXPECT_EQ(metrics.nacked.load(), 1u);
    EXPECT_EQ(metrics.given_back.load(), 0u);
}

// --transport wal: the stream's messages go through the sink beside the table's, a refused
// one is written back, and the slot is confirmed once everything is settled.
TEST(RelayLoop, WalTransportPublishesTheStreamBesideTheTableAndConfirmsTheSlot) {
    using namespace once::relay::testing;
    block_relay_signals();
    SignalFd signals;
    SystemdNotifier notifier;
    Metrics metrics;
    std::vector<std::string> log;
    WalLog wal;
    StoreLog store;
    wal.reads.push_back({wal_message(1, 0x100), wal_message(2, 0x100), wal_end(0x100, 0x110)});
    wal.reads.push_back({wal_message(3, 0x200), wal_end(0x200, 0x210)});
    wal.on_status = [&](once::relay::wal::Lsn f) {
        if (f == 0x210) std::raise(SIGTERM);
    };
    auto outbox = std::make_unique<FakeOutbox>();   // (empty: the fake raises SIGTERM only once it settled something)
    FakeOutbox& db = *outbox;
    Relay::Wiring wiring;
    wiring.db = std::move(outbox);
    wiring.wal_reader = std::make_unique<FakeWalReader>(wal);
    wiring.wal_store = std::make_unique<FakeWalStore>(store);
    Options o = loop_options();
    o.transport = "wal";
    Relay relay(o, [o] { return o; }, std::make_unique<AnsweringSink>(log, std::set<std::string>{wal_id(2)}), metrics,
                signals, notifier, std::move(wiring));

    EXPECT_EQ(relay.run(), 0);

    EXPECT_GE(db.claims, 1);   // the table is still claimed from
    EXPECT_EQ(store.written_back, (std::vector<std::string>{wal_id(2) + " retry 1 503"}));
    EXPECT_NE(std::find(log.begin(), log.end(), "answer " + wal_id(1)), log.end());
    EXPECT_NE(std::find(log.begin(), log.end(), "answer " + wal_id(3)), log.end());
    EXPECT_EQ(wal.confirmed, 0x210u);
    EXPECT_EQ(metrics.wal_written_back.load(), 1u);
}
