// The outbox table as one claim source (TableClaims), driven like the relay drives it, against
// a fake LISTEN connection (LeaseStore), fake lane transactions and a fake sink, on a clock
// the test moves: claims go to the locked lanes, or to the leased claims in the leased mode and
// for 60 s after a locked settlement failed on a healthy connection; wake-ups and the poll
// interval decide when to claim; stop, abandon and database_lost act on each mode's batches.
#include "claim/table_claims.hpp"
#include "outbox/source_db.hpp"   // DbLost
#include "test_fakes.hpp"

#include <gtest/gtest.h>

#include <deque>

using namespace once::relay;
using once::relay::testing::FakeSink;
using once::relay::testing::msg;

namespace {

using Clock = TableClaims::Clock;

class FakeStore final : public LeaseStore {
public:
    bool connected() const override { return up; }
    std::vector<Message> claim(int, Millis, const std::vector<std::string>&) override {
        ++claims;
        if (answers.empty()) return {};
        auto m = std::move(answers.front());
        answers.pop_front();
        return m;
    }
    int64_t ack(const std::vector<std::string>& ids) override {
        if (!up) throw DbLost("connection lost");
        acks.insert(acks.end(), ids.begin(), ids.end());
        return static_cast<int64_t>(ids.size());
    }
    std::string nack(const std::string& id, const std::string&, std::optional<Millis>) override {
        nacks.push_back(id);
        return "retry";
    }
    void dead(const std::string& id, const std::string&) override { deads.push_back(id); }
    void extend(const std::vector<std::string>&, Millis) override {}

    bool up = true;
    int claims = 0;
    std::deque<std::vector<Message>> answers;
    std::vector<std::string> acks, nacks, deads;
};

// A lane's transaction whose settlement fails while the test says so: on a healthy connection
// (TxFailed, as a failed COMMIT) or with the connection gone (DbLost).
struct Lanes {
    int claims = 0, commits = 0, rollbacks = 0, disconnects = 0;
    int fail_settles = 0;           // this many settlements fail on a healthy connection
    bool lose_at_settle = false;    // the next settlement finds the connection gone
    std::deque<std::vector<Message>> answers;
};

class Tx final : public once::relay::testing::BlockingLockedTx {
public:
    explicit Tx(Lanes& lanes) : lanes_(lanes) {}
    bool connect() override { up_ = true; return true; }
    std::vector<Message> claim(int, const std::vector<std::string>&) override {
        ++lanes_.claims;
        if (lanes_.answers.empty()) return {};
        auto m = std::move(lanes_.answers.front());
        lanes_.answers.pop_front();
        return m;
    }
    SettleReport settle_and_commit(const Batch::Settlement& s) override {
        if (lanes_.lose_at_settle) {
            lanes_.lose_at_settle = false;
            up_ = false;
            throw DbLost("server closed the connection unexpectedly");
        }
        if (lanes_.fail_settles > 0) {
            --lanes_.fail_settles;
            throw TxFailed("invalid byte sequence for encoding \"UTF8\"");
        }
        ++lanes_.commits;
        SettleReport r;
        r.acked = static_cast<int64_t>(s.acks.size());
        r.nack_verdicts.assign(s.nacks.size(), "retry");
        return r;
    }
    void rollback() noexcept override { ++lanes_.rollbacks; }
    bool connected() const override { return up_; }
    void disconnect() override { up_ = false; ++lanes_.disconnects; }

private:
    Lanes& lanes_;
    bool up_ = false;
};

struct Fixture {
    explicit Fixture(ClaimMode mode) {
        TableClaims::Config c;
        c.mode = mode;
        c.locked_tx = [this] { return std::make_unique<Tx>(lanes); };
        c.locked_publish_limit = Millis(30000);
        table = std::make_unique<TableClaims>(store, metrics, std::move(c), [this] { return now; });
        table->connect();
    }

    Clock::time_point now{std::chrono::hours(1)};
    FakeStore store;
    Lanes lanes;
    Metrics metrics;
    FakeSink sink;
    std::unique_ptr<TableClaims> table;
    uint64_t next_token = 1;

    void claim() { table->start_claim(ClaimRequest{100, Millis(30000), {}, 0, Millis(1000)}); }
    // What the relay does with the answers: a batch for each non-empty one; the lanes opened.
    std::vector<size_t> open_answers() {
        std::vector<size_t> opened;
        for (auto& a : table->collect_claims()) {
            if (a.messages.empty()) continue;
            uint64_t first = next_token;
            next_token += a.messages.size();
            table->open_batch(a.lane, Batch(std::move(a.messages), first, now));
            opened.push_back(a.lane);
        }
        return opened;
    }
    std::vector<Batch*> open() {
        std::vector<Batch*> out;
        table->open_batches(out);
        return out;
    }
    void dispatch() {
        for (Batch* b : open()) b->dispatch(sink, 100, now);
    }
    void deliver(const std::string& id) {
        Outcome o = sink.answer(id);
        for (Batch* b : open()) b->apply(o);
    }
    std::vector<SettleOutcome> settle() {
        std::vector<SettleOutcome> out;
        table->settle_finished([&](const SettleOutcome& s) { out.push_back(s); });
        return out;
    }
    // A batch of `id` claimed, published, delivered and settled; returns what settling said.
    std::vector<SettleOutcome> round(const std::string& id) {
        claim();
        open_answers();
        dispatch();
        deliver(id);
        return settle();
    }
    // A locked settlement failed on a healthy connection: the table now leases.
    void fail_a_locked_settlement() {
        lanes.answers.push_back({msg("poison")});
        lanes.fail_settles = 1;
        auto settled = round("poison");
        ASSERT_EQ(settled.size(), 1u);
        ASSERT_TRUE(settled[0].given_back);
        ASSERT_FALSE(settled[0].connection_lost);
    }
};

}  // namespace

TEST(TableClaims, TheLockedModeClaimsOnItsLanes) {
    Fixture f(ClaimMode::locked);
    EXPECT_EQ(f.table->mode(), ClaimMode::locked);
    EXPECT_FALSE(f.table->claims_leased());
    f.lanes.answers.push_back({msg("a1")});
    ASSERT_TRUE(f.table->may_claim());
    f.claim();
    auto opened = f.open_answers();
    ASSERT_EQ(opened.size(), 1u);
    EXPECT_NE(opened[0], TableClaims::kLeasedLane);
    EXPECT_EQ(f.lanes.claims, 1);
    EXPECT_EQ(f.store.claims, 0);
    f.dispatch();
    f.deliver("a1");
    auto settled = f.settle();
    ASSERT_EQ(settled.size(), 1u);
    EXPECT_FALSE(settled[0].given_back);
    EXPECT_EQ(f.lanes.commits, 1);
    EXPECT_TRUE(f.store.acks.empty());   // acked inside the lane's transaction
}

TEST(TableClaims, AFailedLockedSettlementLeasesTheNextClaims) {
    Fixture f(ClaimMode::locked);
    f.fail_a_locked_settlement();
    EXPECT_TRUE(f.table->claims_leased());
    EXPECT_EQ(f.table->mode(), ClaimMode::locked);   // the mode it returns to
    EXPECT_EQ(f.table->open_count(), 0u);
    ASSERT_TRUE(f.table->may_claim());               // the settlement was a wake-up
    f.store.answers.push_back({msg("p2")});
    int lane_claims = f.lanes.claims;
    f.claim();
    EXPECT_EQ(f.store.claims, 1);                    // once.claim on the LISTEN connection
    EXPECT_EQ(f.lanes.claims, lane_claims);
    EXPECT_TRUE(f.table->settlement_due());          // answered at once: the relay does not sleep
    auto opened = f.open_answers();
    ASSERT_EQ(opened, (std::vector<size_t>{TableClaims::kLeasedLane}));
    f.dispatch();
    f.deliver("p2");
    auto settled = f.settle();
    ASSERT_EQ(settled.size(), 1u);
    EXPECT_EQ(f.store.acks, (std::vector<std::string>{"p2"}));   // acked as a leased message
}

TEST(TableClaims, TheLeasedClaimsAfterAFailureEndAfterSixtySeconds) {
    Fixture f(ClaimMode::locked);
    f.fail_a_locked_settlement();
    f.now += TableClaims::kLeasedAfterFailure - std::chrono::seconds(1);
    EXPECT_TRUE(f.table->claims_leased());
    f.now += std::chrono::seconds(1);
    EXPECT_FALSE(f.table->claims_leased());
    f.lanes.answers.push_back({msg("b1")});
    int lane_claims = f.lanes.claims;
    f.claim();
    EXPECT_EQ(f.lanes.claims, lane_claims + 1);      // on the lanes again
    EXPECT_EQ(f.store.claims, 0);
    auto opened = f.open_answers();
    ASSERT_EQ(opened.size(), 1u);
    EXPECT_NE(opened[0], TableClaims::kLeasedLane);
}

TEST(TableClaims, ASettlementLostWithItsConnectionDoesNotLease) {
    Fixture f(ClaimMode::locked);
    f.lanes.answers.push_back({msg("a1")});
    f.lanes.lose_at_settle = true;
    auto settled = f.round("a1");
    ASSERT_EQ(settled.size(), 1u);
    EXPECT_TRUE(settled[0].given_back);
    EXPECT_TRUE(settled[0].connection_lost);         // the relay reconnects instead
    EXPECT_FALSE(f.table->claims_leased());
}

TEST(TableClaims, TheLeasedModeClaimsLeased) {
    Fixture f(ClaimMode::leased);
    EXPECT_TRUE(f.table->claims_leased());
    f.store.answers.push_back({msg("a1")});
    auto settled = f.round("a1");
    ASSERT_EQ(settled.size(), 1u);
    EXPECT_EQ(f.store.claims, 1);
    EXPECT_EQ(f.lanes.claims, 0);
    EXPECT_EQ(f.store.acks, (std::vector<std::string>{"a1"}));
}

TEST(TableClaims, AnEmptyAnswerWaitsForAWakeUpOrThePollInterval) {
    Fixture f(ClaimMode::locked);
    ASSERT_TRUE(f.table->may_claim());   // at start
    f.claim();
    EXPECT_FALSE(f.table->may_claim());  // the claim is out
    EXPECT_TRUE(f.open_answers().empty());
    EXPECT_FALSE(f.table->may_claim());  // empty: the outbox is drained
    EXPECT_EQ(f.table->claim_due(), f.now + Millis(1000));
    f.now += Millis(1000);
    EXPECT_TRUE(f.table->may_claim());   // the poll interval passed
    f.claim();
    f.open_answers();
    EXPECT_FALSE(f.table->may_claim());
    f.table->wake();
    EXPECT_TRUE(f.table->may_claim());   // a NOTIFY
    f.store.up = false;
    EXPECT_FALSE(f.table->may_claim());  // the LISTEN connection is away
    EXPECT_EQ(f.table->claim_due(), std::nullopt);
}

TEST(TableClaims, AWakeUpWhileAClaimIsOutSurvivesItsEmptyAnswer) {
    Fixture f(ClaimMode::locked);
    f.claim();
    f.table->wake();                     // committed after the claim's snapshot, perhaps
    EXPECT_TRUE(f.open_answers().empty());
    EXPECT_TRUE(f.table->may_claim());
}

TEST(TableClaims, AnswersArrivingWithTheDatabaseAwayAreRefused) {
    Fixture f(ClaimMode::locked);
    f.lanes.answers.push_back({msg("a1")});
    f.claim();
    f.store.up = false;
    auto answers = f.table->collect_claims();
    ASSERT_EQ(answers.size(), 1u);
    ASSERT_NE(answers[0].refused, nullptr);
    EXPECT_STREQ(answers[0].refused, "database connection lost");
    EXPECT_TRUE(f.table->give_back_unopened(answers[0].lane, answers[0].messages));   // rolled back untouched
    EXPECT_EQ(f.lanes.rollbacks, 1);
    EXPECT_EQ(f.table->open_count(), 0u);
}

TEST(TableClaims, TheLockedModeLetsStoppedBatchesFinishAndGivesThemBackWhenAbandoned) {
    Fixture f(ClaimMode::locked);
    f.lanes.answers.push_back({msg("a1"), msg("a2")});
    f.claim();
    f.open_answers();
    f.table->stop("relay stopping before publishing");
    f.dispatch();
    EXPECT_EQ(f.sink.submitted.size(), 2u);          // a locked batch commits or rolls back whole
    EXPECT_EQ(f.table->abandon("not finished within the drain bound"), 2u);
    EXPECT_EQ(f.lanes.rollbacks, 1);
    EXPECT_EQ(f.table->open_count(), 0u);
    EXPECT_EQ(f.lanes.commits, 0);
}

TEST(TableClaims, TheLockedModeGivesBackWithALostDatabase) {
    Fixture f(ClaimMode::locked);
    f.lanes.answers.push_back({msg("a1"), msg("a2")});
    f.claim();
    f.open_answers();
    f.claim();                                       // a second lane's claim out
    EXPECT_EQ(f.table->open_count(), 2u);
    EXPECT_EQ(f.table->database_lost("database connection lost"), 2u);
    EXPECT_EQ(f.lanes.disconnects, 2);               // their transactions roll back with them
    EXPECT_EQ(f.table->open_count(), 0u);
}

TEST(TableClaims, TheLeasedModeStopsBatchesAndKeepsThemThroughAbandonAndALostDatabase) {
    Fixture f(ClaimMode::leased);
    f.store.answers.push_back({msg("a1"), msg("a2")});
    f.claim();
    f.open_answers();
    f.table->stop("relay stopping before publishing");
    f.dispatch();
    EXPECT_TRUE(f.sink.submitted.empty());           // nothing more is published
    EXPECT_EQ(f.table->abandon("not finished within the drain bound"), 0u);   // their leases run out
    EXPECT_EQ(f.table->database_lost("database connection lost"), 0u);
    EXPECT_EQ(f.table->open_count(), 1u);            // settled (nacked) when the database is back
    auto settled = f.settle();
    ASSERT_EQ(settled.size(), 1u);
    EXPECT_EQ(f.store.nacks, (std::vector<std::string>{"a1", "a2"}));
}

TEST(TableClaims, LeasingAfterAFailureStopAbandonAndDatabaseLostReachBothKinds) {
    Fixture f(ClaimMode::locked);
    f.fail_a_locked_settlement();
    f.store.answers.push_back({msg("l1")});
    f.claim();                                       // leased
    f.open_answers();
    f.now += TableClaims::kLeasedAfterFailure;
    f.lanes.answers.push_back({msg("k1"), msg("k2")});
    f.dispatch();                                    // l1 handed to the sink: room for a claim
    ASSERT_TRUE(f.table->may_claim());
    f.claim();                                       // locked again
    f.open_answers();
    EXPECT_EQ(f.table->open_count(), 2u);
    EXPECT_EQ(f.table->may_claim(), false);          // two open batches at most, of both kinds
    f.table->stop("relay stopping before publishing");
    f.dispatch();
    EXPECT_EQ(f.sink.submitted, (std::vector<std::string>{"poison", "l1", "k1", "k2"}));   // the locked one goes on
    EXPECT_EQ(f.table->abandon("not finished within the drain bound"), 2u);   // the locked batch only
    EXPECT_EQ(f.table->open_count(), 1u);
    EXPECT_EQ(f.table->database_lost("database connection lost"), 0u);        // the leased one waits
    EXPECT_EQ(f.table->open_count(), 1u);
}
