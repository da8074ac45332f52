// Batch: the per-message state of one claimed batch, driven against a fake sink that answers
// when and in whatever order the test says.
#include "batch.hpp"
#include "outbox/locked_tx.hpp"
#include "sinks/sink.hpp"
#include "outbox/source_db.hpp"
#include "test_fakes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace once::relay;
using State = Batch::State;
using once::relay::testing::FakeSink;
using once::relay::testing::msg;
using once::relay::testing::settle_locked;

namespace {

const Batch::Clock::time_point t0{};

std::vector<std::string> ids(const std::vector<const Batch::Entry*>& entries) {
    std::vector<std::string> out;
    for (auto* e : entries) out.push_back(e->msg.id);
    return out;
}

}  // namespace

TEST(Batch, AKeysMessagesGoOneAfterAnotherKeylessOnesAtOnce) {
    FakeSink sink;
    Batch b({msg("a1", "a"), msg("a2", "a"), msg("n1"), msg("b1", "b"), msg("n2")}, 100, t0);
    EXPECT_EQ(b.dispatch(sink, 100, t0), 4u);
    EXPECT_EQ(sink.submitted, (std::vector<std::string>{"a1", "n1", "b1", "n2"}));
    EXPECT_FALSE(b.all_dispatched());
    ASSERT_NE(b.apply(sink.answer("a1")), nullptr);
    EXPECT_EQ(b.dispatch(sink, 100, t0), 1u);
    EXPECT_EQ(sink.submitted.back(), "a2");
    EXPECT_TRUE(b.all_dispatched());
}

TEST(Batch, TheWindowBoundsWhatIsInFlight) {
    FakeSink sink;
    Batch b({msg("1"), msg("2"), msg("3")}, 0, t0);
    EXPECT_EQ(b.dispatch(sink, 2, t0), 2u);
    EXPECT_EQ(b.dispatch(sink, 2, t0), 0u);
    b.apply(sink.answer("2"));
    EXPECT_EQ(b.dispatch(sink, 2, t0), 1u);
    EXPECT_EQ(sink.submitted, (std::vector<std::string>{"1", "2", "3"}));
}

TEST(Batch, AnswersOutOfOrderSettleEachMessage) {
    FakeSink sink;
    Batch b({msg("1"), msg("2"), msg("3"), msg("4")}, 10, t0);
    b.dispatch(sink, 100, t0);
    b.apply(sink.answer("4"));
    b.apply(sink.answer("2", Verdict::retry, "HTTP 503", Millis(2000)));
    b.apply(sink.answer("1"));
    EXPECT_FALSE(b.finished());
    b.apply(sink.answer("3", Verdict::dead, "HTTP 400"));
    ASSERT_TRUE(b.finished());
    auto s = b.settlement();
    EXPECT_EQ(s.acks, (std::vector<std::string>{"1", "4"}));
    ASSERT_EQ(ids(s.nacks), (std::vector<std::string>{"2"}));
    EXPECT_EQ(s.nacks[0]->error, "HTTP 503");
    EXPECT_EQ(s.nacks[0]->retry_after, Millis(2000));
    ASSERT_EQ(ids(s.deads), (std::vector<std::string>{"3"}));
    EXPECT_EQ(s.deads[0]->error, "HTTP 400");
}

TEST(Batch, ForeignAndRepeatedAnswersAreIgnored) {
    FakeSink sink;
    Batch b({msg("1")}, 10, t0);
    b.dispatch(sink, 100, t0);
    EXPECT_FALSE(b.owns(9));
    EXPECT_FALSE(b.owns(11));
    EXPECT_EQ(b.apply(Outcome{11, Verdict::delivered, "", std::nullopt}), nullptr);
    Outcome o = sink.answer("1");
    EXPECT_NE(b.apply(o), nullptr);
    EXPECT_EQ(b.apply(o), nullptr);   // a second answer for the same publish
    EXPECT_EQ(b.settlement().acks.size(), 1u);
}

TEST(Batch, AFailedKeyHoldsBackItsLaterMessages) {
    FakeSink sink;
    Batch b({msg("a1", "a"), msg("b1", "b"), msg("a2", "a"), msg("a3", "a"), msg("b2", "b")}, 0, t0);
    b.dispatch(sink, 100, t0);
    EXPECT_EQ(sink.submitted, (std::vector<std::string>{"a1", "b1"}));
    b.apply(sink.answer("a1", Verdict::retry, "timeout"));
    b.apply(sink.answer("b1"));
    b.dispatch(sink, 100, t0);
    // a2 and a3 would overtake a1: they are never published.
    EXPECT_EQ(sink.submitted, (std::vector<std::string>{"a1", "b1", "b2"}));
    EXPECT_EQ(b.entry(2).state, State::held_back);
    EXPECT_EQ(b.entry(3).state, State::held_back);
    EXPECT_NE(b.entry(2).error.find("earlier message with key \"a\" failed: timeout"), std::string::npos);
    EXPECT_EQ(b.entry(2).retry_after, Millis(0));
    b.apply(sink.answer("b2"));
    ASSERT_TRUE(b.finished());
    auto s = b.settlement();
    EXPECT_EQ(s.acks, (std::vector<std::string>{"b1", "b2"}));
    EXPECT_EQ(ids(s.nacks), (std::vector<std::string>{"a1", "a2", "a3"}));
}

TEST(Batch, ADeadLetterAlsoHoldsBackItsKey) {
    FakeSink sink;
    Batch b({msg("a1", "a"), msg("a2", "a")}, 0, t0);
    b.dispatch(sink, 100, t0);
    b.apply(sink.answer("a1", Verdict::dead, "HTTP 422"));
    EXPECT_EQ(b.dispatch(sink, 100, t0), 0u);
    ASSERT_TRUE(b.finished());
    EXPECT_EQ(ids(b.settlement().deads), (std::vector<std::string>{"a1"}));
    EXPECT_EQ(ids(b.settlement().nacks), (std::vector<std::string>{"a2"}));
}

TEST(Batch, TheLeaseIsExtendedAtHalfTimeForWhatIsOpen) {
    using namespace std::chrono_literals;
    FakeSink sink;
    Batch b({msg("1"), msg("2"), msg("3")}, 0, t0);
    b.dispatch(sink, 2, t0);
    b.apply(sink.answer("1"));
    EXPECT_FALSE(b.lease_due(t0 + 14s, Millis(30000)));
    EXPECT_TRUE(b.lease_due(t0 + 15s, Millis(30000)));
    // The one in flight and the one still waiting; not the delivered one.
    EXPECT_EQ(b.open_ids(), (std::vector<std::string>{"2", "3"}));
    b.lease_extended(t0 + 15s);
    EXPECT_FALSE(b.lease_due(t0 + 29s, Millis(30000)));
    EXPECT_TRUE(b.lease_due(t0 + 30s, Millis(30000)));
    b.dispatch(sink, 2, t0 + 30s);
    b.apply(sink.answer("2"));
    b.apply(sink.answer("3"));
    EXPECT_FALSE(b.lease_due(t0 + 100s, Millis(30000)));   // finished: nothing to extend
}

TEST(Batch, StoppingReturnsWhatWasNotPublishedAndWaitsForWhatWas) {
    FakeSink sink;
    Batch b({msg("1"), msg("2"), msg("a1", "a"), msg("a2", "a")}, 0, t0);
    b.dispatch(sink, 2, t0);   // 1 and 2 in flight
    b.stop("relay stopping before publishing");
    EXPECT_TRUE(b.all_dispatched());
    EXPECT_FALSE(b.finished());
    EXPECT_EQ(b.dispatch(sink, 100, t0), 0u);
    EXPECT_EQ(b.entry(2).state, State::returned);
    b.apply(sink.answer("1"));
    EXPECT_FALSE(b.finished());
    // The drain bound passes: the sink gives up on the rest.
    std::vector<Outcome> abandoned;
    sink.abandon(abandoned);
    for (auto& o : abandoned) b.apply(o);
    ASSERT_TRUE(b.finished());
    auto s = b.settlement();
    EXPECT_EQ(s.acks, (std::vector<std::string>{"1"}));
    EXPECT_EQ(ids(s.nacks), (std::vector<std::string>{"2", "a1", "a2"}));
    EXPECT_EQ(s.nacks[1]->error, "relay stopping before publishing");
    EXPECT_EQ(s.nacks[1]->retry_after, Millis(0));
}

TEST(Batch, AnUnfinishedBatchSettlesOnlyWhatIsDecided) {
    FakeSink sink;
    Batch b({msg("1"), msg("2")}, 0, t0);
    b.dispatch(sink, 100, t0);
    b.apply(sink.answer("1"));
    auto s = b.settlement();   // the database went away: "2" comes back with its lease
    EXPECT_EQ(s.acks, (std::vector<std::string>{"1"}));
    EXPECT_TRUE(s.nacks.empty());
}

TEST(Batch, EmptyBatchIsFinished) {
    Batch b({}, 0, t0);
    EXPECT_TRUE(b.finished());
}

TEST(Batch, TheSettlementIsTakenOnceAndOnlyWhenFinished) {
    FakeSink sink;
    Batch b({msg("1"), msg("2")}, 0, t0);
    b.dispatch(sink, 100, t0);
    b.apply(sink.answer("1"));
    EXPECT_FALSE(b.take_settlement());   // "2" is still in flight
    b.apply(sink.answer("2"));
    auto s = b.take_settlement();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->acks, (std::vector<std::string>{"1", "2"}));
    EXPECT_FALSE(b.take_settlement());   // a second settle would ack twice
}

TEST(Batch, AGivenBackBatchPublishesNothingMoreAndSettlesNothing) {
    FakeSink sink;
    Batch b({msg("1"), msg("2"), msg("3")}, 0, t0);
    b.dispatch(sink, 2, t0);
    b.give_back("database connection lost");
    EXPECT_TRUE(b.given_back());
    EXPECT_EQ(b.dispatch(sink, 100, t0), 0u);
    EXPECT_EQ(b.entry(2).state, State::returned);
    // Answers still come for what was in flight; they change nothing the outbox will hear of.
    EXPECT_NE(b.apply(sink.answer("1")), nullptr);
    EXPECT_NE(b.apply(sink.answer("2", Verdict::retry, "timeout")), nullptr);
    ASSERT_TRUE(b.finished());
    auto s = b.settlement();
    EXPECT_TRUE(s.acks.empty());
    EXPECT_TRUE(s.nacks.empty());
    EXPECT_TRUE(s.deads.empty());
    EXPECT_FALSE(b.take_settlement());
}

// ------------------------------------------------------------------------------ locked mode

namespace {

// A locked transaction that records what the relay asked of it.
class FakeTx final : public once::relay::testing::BlockingLockedTx {
public:
    enum class Fail { none, lost, server };

    std::vector<Message> claim(int, const std::vector<std::string>&) override { ++claims; return {}; }
    SettleReport settle_and_commit(const Batch::Settlement& s) override {
        ++commits;
        acks = s.acks;
        nacks = ids(s.nacks);
        deads = ids(s.deads);
        if (fail == Fail::lost) { up = false; throw DbLost("connection lost: server closed the connection"); }
        if (fail == Fail::server) throw TxFailed("COMMIT failed (SQLSTATE ON213): unsettled");
        SettleReport r;
        r.acked = static_cast<int64_t>(s.acks.size());
        for (size_t i = 0; i < s.nacks.size(); ++i) r.nack_verdicts.push_back(i == 0 ? "dead" : "retry");
        return r;
    }
    void rollback() noexcept override { ++rollbacks; }
    bool connected() const override { return up; }
    void disconnect() override { up = false; }

    Fail fail = Fail::none;
    bool up = true;
    int claims = 0, commits = 0, rollbacks = 0;
    std::vector<std::string> acks, nacks, deads;
};

}  // namespace

TEST(LockedBatch, SettleAndCommitHappenOncePerBatchWithOutOfOrderAnswers) {
    FakeSink sink;
    FakeTx tx;
    Batch b({msg("a1", "a"), msg("n1"), msg("a2", "a"), msg("b1", "b"), msg("n2")}, 1, t0);
    b.dispatch(sink, 100, t0);   // a1, n1, b1, n2 (a2 waits for a1)
    EXPECT_EQ(settle_locked(b, tx).result, LockedSettle::Result::not_finished);
    b.apply(sink.answer("n2"));
    b.apply(sink.answer("b1", Verdict::dead, "HTTP 422"));
    b.apply(sink.answer("n1", Verdict::retry, "503", Millis(1000)));
    EXPECT_EQ(settle_locked(b, tx).result, LockedSettle::Result::not_finished);
    b.apply(sink.answer("a1"));
    b.dispatch(sink, 100, t0);
    EXPECT_EQ(settle_locked(b, tx).result, LockedSettle::Result::not_finished);   // a2 in flight
    EXPECT_EQ(tx.commits, 0);
    b.apply(sink.answer("a2"));
    LockedSettle r = settle_locked(b, tx);
    ASSERT_EQ(r.result, LockedSettle::Result::committed);
    EXPECT_EQ(tx.commits, 1);
    // One transaction: the refused ones are given back with the others' ack.
    EXPECT_EQ(tx.acks, (std::vector<std::string>{"a1", "a2", "n2"}));
    EXPECT_EQ(tx.nacks, (std::vector<std::string>{"n1"}));
    EXPECT_EQ(tx.deads, (std::vector<std::string>{"b1"}));
    EXPECT_EQ(r.report.acked, 3);
    ASSERT_EQ(ids(r.settlement.nacks), (std::vector<std::string>{"n1"}));
    EXPECT_EQ(r.settlement.nacks[0]->retry_after, Millis(1000));
    // Whatever the loop does next, the batch is not settled again.
    EXPECT_EQ(settle_locked(b, tx).result, LockedSettle::Result::not_finished);
    EXPECT_EQ(tx.commits, 1);
    EXPECT_EQ(tx.rollbacks, 0);
}

TEST(LockedBatch, ALostCommitGivesTheBatchBack) {
    FakeSink sink;
    FakeTx tx;
    tx.fail = FakeTx::Fail::lost;
    Batch b({msg("1"), msg("2")}, 0, t0);
    b.dispatch(sink, 100, t0);
    b.apply(sink.answer("2"));
    b.apply(sink.answer("1"));
    LockedSettle r = settle_locked(b, tx);
    ASSERT_EQ(r.result, LockedSettle::Result::given_back);
    EXPECT_TRUE(r.connection_lost);   // the relay reconnects with backoff
    EXPECT_NE(r.error.find("connection lost"), std::string::npos);
    EXPECT_TRUE(b.given_back());
    // The outbox has both back: nothing is acked later, not even after a reconnect.
    EXPECT_TRUE(b.settlement().acks.empty());
    tx.fail = FakeTx::Fail::none;
    tx.up = true;
    EXPECT_EQ(settle_locked(b, tx).result, LockedSettle::Result::not_finished);
    EXPECT_EQ(tx.commits, 1);
}

TEST(LockedBatch, AFailedCommitOnAHealthyConnectionGivesTheBatchBackWithoutReconnecting) {
    FakeSink sink;
    FakeTx tx;
    tx.fail = FakeTx::Fail::server;
    Batch b({msg("1"), msg("a1", "a"), msg("a2", "a")}, 0, t0);
    b.dispatch(sink, 100, t0);
    b.apply(sink.answer("a1", Verdict::retry, "timeout"));   // a2 held back
    b.apply(sink.answer("1"));
    LockedSettle r = settle_locked(b, tx);
    ASSERT_EQ(r.result, LockedSettle::Result::given_back);
    EXPECT_FALSE(r.connection_lost);
    EXPECT_NE(r.error.find("ON213"), std::string::npos);
    EXPECT_EQ(tx.nacks, (std::vector<std::string>{"a1", "a2"}));   // what it tried, in one flight
    EXPECT_TRUE(b.given_back());
    EXPECT_FALSE(b.take_settlement());
}

// The relay's loop settles in two halves, so a COMMIT is never waited for while the other
// connection's claim could run: the settlement is taken once, at start, and the answer is
// read later; a failure to send it surfaces only when the answer is read.
TEST(LockedBatch, ASettlementSentWithoutWaitingIsTakenOnceAndAnsweredLater) {
    FakeSink sink;
    FakeTx tx;
    Batch b({msg("a1", "a"), msg("n1")}, 0, t0);
    b.dispatch(sink, 100, t0);
    b.apply(sink.answer("a1"));
    EXPECT_FALSE(start_settle_locked(b, tx));   // n1 still in flight: nothing sent
    EXPECT_EQ(tx.commits, 0);
    b.apply(sink.answer("n1", Verdict::retry, "503"));
    std::optional<Batch::Settlement> s = start_settle_locked(b, tx);
    ASSERT_TRUE(s);
    EXPECT_FALSE(start_settle_locked(b, tx));   // taken: a later turn sends nothing more
    ASSERT_TRUE(tx.settle_ready());
    LockedSettle r = finish_settle_locked(b, tx, std::move(*s));
    ASSERT_EQ(r.result, LockedSettle::Result::committed);
    EXPECT_EQ(tx.commits, 1);
    EXPECT_EQ(tx.acks, (std::vector<std::string>{"a1"}));
    EXPECT_EQ(ids(r.settlement.nacks), (std::vector<std::string>{"n1"}));

    FakeTx lost;
    lost.fail = FakeTx::Fail::lost;
    Batch c({msg("1")}, 10, t0);
    c.dispatch(sink, 100, t0);
    c.apply(sink.answer("1"));
    std::optional<Batch::Settlement> sc = start_settle_locked(c, lost);   // does not throw
    ASSERT_TRUE(sc);
    LockedSettle rc = finish_settle_locked(c, lost, std::move(*sc));
    ASSERT_EQ(rc.result, LockedSettle::Result::given_back);
    EXPECT_TRUE(rc.connection_lost);
    EXPECT_TRUE(c.given_back());
}

TEST(LockedBatch, StoppingAtTheDrainBoundRollsBackInsteadOfSettling) {
    FakeSink sink;
    FakeTx tx;
    Batch b({msg("1"), msg("2")}, 0, t0);
    b.dispatch(sink, 1, t0);
    b.apply(sink.answer("1"));
    // SIGTERM's bound passed with "2" unpublished: the relay rolls back and gives the batch back.
    tx.rollback();
    b.give_back("not finished within the drain bound");
    EXPECT_EQ(b.dispatch(sink, 100, t0), 0u);
    ASSERT_TRUE(b.finished());
    EXPECT_EQ(settle_locked(b, tx).result, LockedSettle::Result::not_finished);
    EXPECT_EQ(tx.commits, 0);
    EXPECT_EQ(tx.rollbacks, 1);
}

TEST(LockedBatch, SinkErrorsAreMadeValidUtf8BeforeTheyReachTheSettlement) {
    EXPECT_EQ(valid_utf8("HTTP 400: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "HTTP 400: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    EXPECT_EQ(valid_utf8("cut in the middle: \xe2\x82"), "cut in the middle: ??");
    EXPECT_EQ(valid_utf8("latin1 \xe9t\xe9"), "latin1 ?t?");
    EXPECT_EQ(valid_utf8("\xc0\xaf overlong, \xed\xa0\x80 surrogate, \xf4\x90\x80\x80 too big"),
              "?? overlong, ??? surrogate, ???? too big");
    EXPECT_EQ(valid_utf8(""), "");
}
