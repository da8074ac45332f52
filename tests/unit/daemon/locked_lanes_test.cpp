// The locked claim mode's lanes, driven like the relay drives them, against fake transactions
// (claims answered when the test says) and a fake sink: each lane's state goes round idle ->
// claiming -> publishing -> settling -> idle, and every way out of it gives the batch back.
#include "claim/locked_lanes.hpp"
#include "sinks/sink.hpp"
#include "outbox/source_db.hpp"
#include "test_fakes.hpp"

#include <gtest/gtest.h>

#include <deque>

using namespace once::relay;
using once::relay::testing::FakeSink;
using once::relay::testing::msg;
using once::relay::testing::FakeTx;
using once::relay::testing::TxLog;

namespace {

const LockedLanes::Clock::time_point t0{};

struct Fixture {
    TxLog log;
    std::deque<std::vector<Message>> answers;   // what the next claims return, in order
    bool has_claim_locked = true;
    Metrics metrics;
    LockedLanes lanes{2, [this] { return std::make_unique<FakeTx>(log, answers, has_claim_locked); }, Millis(1000), metrics};
    FakeSink sink;
    uint64_t next_token = 1;

    // What the relay does with the answers: a batch for each non-empty one.
    void open_answers() {
        for (auto& a : lanes.collect_claims()) {
            if (a.messages.empty()) continue;
            uint64_t first = next_token;
            next_token += a.messages.size();
            lanes.open_batch(a.lane, Batch(std::move(a.messages), first, t0));
        }
    }
    void dispatch(size_t window = 100) {
        std::vector<Batch*> open;
        lanes.open_batches(open);
        for (Batch* b : open) b->dispatch(sink, window, t0);
    }
    void apply(const Outcome& o) {
        std::vector<Batch*> open;
        lanes.open_batches(open);
        for (Batch* b : open) b->apply(o);
    }
    std::vector<SettleOutcome> settle() {
        std::vector<SettleOutcome> out;
        lanes.settle_finished([&](const SettleOutcome& s) { out.push_back(s); });
        return out;
    }
    void claim(uint64_t wants = 0) { lanes.start_claim(ClaimRequest{100, Millis(30000), {}, wants}); }
};

}  // namespace

TEST(LockedLanes, ALaneGoesRoundIdleClaimingPublishingSettlingIdle) {
    Fixture f;
    ASSERT_TRUE(f.lanes.connect());
    f.answers.push_back({msg("a1", "k"), msg("a2", "k")});
    EXPECT_EQ(f.lanes.state(0), LaneState::idle);
    ASSERT_TRUE(f.lanes.may_claim());
    f.claim(7);
    EXPECT_EQ(f.lanes.state(0), LaneState::claiming);
    EXPECT_EQ(f.lanes.open_count(), 1u);   // a claim out may bring messages
    f.open_answers();
    EXPECT_EQ(f.lanes.state(0), LaneState::publishing);
    f.dispatch();
    f.apply(f.sink.answer("a1"));
    EXPECT_TRUE(f.settle().empty());       // a2 is not published yet: nothing settles
    EXPECT_EQ(f.lanes.state(0), LaneState::publishing);
    f.dispatch();
    f.apply(f.sink.answer("a2"));
    EXPECT_TRUE(f.lanes.settlement_due());
    auto settled = f.settle();
    ASSERT_EQ(settled.size(), 1u);
    EXPECT_FALSE(settled[0].given_back);
    EXPECT_EQ(settled[0].batch_size, 2u);
    EXPECT_EQ(f.log.acks, (std::vector<std::string>{"a1", "a2"}));
    EXPECT_EQ(f.log.commits, 1);
    EXPECT_EQ(f.metrics.acked.load(), 2u);  // counted from the database's answer
    EXPECT_EQ(f.lanes.state(0), LaneState::idle);
    EXPECT_EQ(f.lanes.open_count(), 0u);
    EXPECT_TRUE(f.settle().empty());       // settled once
    EXPECT_EQ(f.log.commits, 1);
}

TEST(LockedLanes, AnEmptyAnswerLeavesTheLaneIdleAndRemembersWhenItWasAsked) {
    Fixture f;
    ASSERT_TRUE(f.lanes.connect());
    f.claim(41);
    auto answers = f.lanes.collect_claims();
    ASSERT_EQ(answers.size(), 1u);
    EXPECT_TRUE(answers[0].messages.empty());
    EXPECT_EQ(answers[0].claim_wants, 41u);   // the relay compares it with the wake-ups since
    EXPECT_EQ(f.lanes.state(0), LaneState::idle);
    EXPECT_EQ(f.lanes.open_count(), 0u);
}

TEST(LockedLanes, ASecondClaimGoesOutOnlyWhileABacklogDrainsAndNeverBehindQueuedWork) {
    Fixture f;
    ASSERT_TRUE(f.lanes.connect());
    f.claim();                                 // a wake-up: one claim takes what there is
    EXPECT_FALSE(f.lanes.may_claim());         // a second would mostly come back empty
    f.open_answers();                          // (empty)
    f.answers.push_back({msg("a1"), msg("a2"), msg("a3")});
    f.claim();
    f.open_answers();                          // a backlog: the answer brought messages
    f.dispatch(2);                             // the sink's window takes two of three
    EXPECT_FALSE(f.lanes.may_claim());         // claim behind the queued work later
    f.dispatch(3);
    EXPECT_TRUE(f.lanes.may_claim());
    f.claim();
    EXPECT_EQ(f.lanes.state(1), LaneState::claiming);
    EXPECT_FALSE(f.lanes.may_claim());         // both lanes busy
    f.apply(f.sink.answer("a1"));
    f.apply(f.sink.answer("a2"));
    f.apply(f.sink.answer("a3"));
    ASSERT_EQ(f.settle().size(), 1u);
    EXPECT_TRUE(f.lanes.may_claim());          // draining: a second claim beside the one out
}

TEST(LockedLanes, ABatchOverItsPublishLimitPublishesNoMoreAndGivesTheRestBackInItsSettlement) {
    Fixture f;
    ASSERT_TRUE(f.lanes.connect());
    f.answers.push_back({msg("a1", "k"), msg("a2", "k"), msg("b1", "j")});
    f.claim();
    f.open_answers();
    f.dispatch();                               // a1 and b1 in flight, a2 waits behind a1
    EXPECT_EQ(f.lanes.stop_overdue(t0 + Millis(999)), 0u);
    EXPECT_EQ(f.lanes.stop_overdue(t0 + Millis(1000)), 1u);
    EXPECT_EQ(f.lanes.stop_overdue(t0 + Millis(2000)), 0u);   // stopped once
    f.apply(f.sink.answer("a1"));
    f.apply(f.sink.answer("b1"));
    f.dispatch();                               // a2 is not handed over any more
    auto settled = f.settle();
    ASSERT_EQ(settled.size(), 1u);
    EXPECT_FALSE(settled[0].given_back);
    EXPECT_EQ(f.log.acks, (std::vector<std::string>{"a1", "b1"}));
    EXPECT_EQ(f.log.nacks, (std::vector<std::string>{"a2"}));
}

TEST(LockedLanes, ALostDatabaseGivesEveryBatchAndClaimBackAndNothingOfItSettlesLater) {
    Fixture f;
    ASSERT_TRUE(f.lanes.connect());
    f.answers.push_back({msg("a1"), msg("a2")});
    f.claim();
    f.open_answers();
    f.dispatch();
    f.answers.push_back({msg("b1")});
    f.claim();            // answered, not collected yet
    EXPECT_EQ(f.lanes.give_back_all("database connection lost", true), 2u);
    EXPECT_EQ(f.log.disconnects, 2);             // closing the connections rolls them back
    EXPECT_EQ(f.lanes.state(0), LaneState::idle);
    EXPECT_EQ(f.lanes.state(1), LaneState::idle);
    EXPECT_EQ(f.lanes.open_count(), 0u);
    f.sink.answer("a1");                         // late answers match no batch
    EXPECT_TRUE(f.settle().empty());
    EXPECT_EQ(f.log.commits, 0);
}

TEST(LockedLanes, TheDrainBoundRollsBackOnHealthyConnections) {
    Fixture f;
    ASSERT_TRUE(f.lanes.connect());
    f.answers.push_back({msg("a1")});
    f.claim();
    f.open_answers();
    f.claim();            // a claim out on the other lane
    EXPECT_EQ(f.lanes.give_back_all("not finished within the drain bound", false), 1u);
    EXPECT_EQ(f.log.rollbacks, 1);               // the batch's transaction
    EXPECT_EQ(f.log.disconnects, 1);             // the claim out: its connection
    EXPECT_EQ(f.lanes.open_count(), 0u);
}

TEST(LockedLanes, ADatabaseWithoutClaimLockedLeavesNoLanes) {
    Fixture f;
    f.has_claim_locked = false;
    EXPECT_FALSE(f.lanes.connect());
    EXPECT_EQ(f.lanes.size(), 0u);
    EXPECT_FALSE(f.lanes.may_claim());
}
