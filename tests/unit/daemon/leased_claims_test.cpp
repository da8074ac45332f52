// The leased claim mode against a fake outbox (LeaseStore) and a fake sink: claims made on the
// LISTEN connection are answered at once, finished batches are acked together and their
// failures nacked or dead-lettered one by one, leases are extended at half time, and what the
// sink confirmed while the database was away is acked after the reconnect.
#include "claim/leased_claims.hpp"
#include "outbox/source_db.hpp"
#include "test_fakes.hpp"

#include <gtest/gtest.h>

#include <deque>

using namespace once::relay;
using once::relay::testing::FakeSink;
using once::relay::testing::msg;

namespace {

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
        ack_calls.push_back(ids);
        return static_cast<int64_t>(ids.size());
    }
    std::string nack(const std::string& id, const std::string&, std::optional<Millis>) override {
        if (lose_at_nack) { up = false; throw DbLost("connection lost"); }
        nacks.push_back(id);
        return "retry";
    }
    void dead(const std::string& id, const std::string&) override { deads.push_back(id); }
    void extend(const std::vector<std::string>& ids, Millis) override { extended.push_back(ids); }

    bool up = true;
    bool lose_at_nack = false;
    int claims = 0;
    std::deque<std::vector<Message>> answers;
    std::vector<std::vector<std::string>> ack_calls, extended;
    std::vector<std::string> nacks, deads;
};

const LeasedClaims::Clock::time_point t0{};

struct Fixture {
    FakeStore store;
    Metrics metrics;
    LeasedClaims leased{store, metrics, nullptr};
    FakeSink sink;
    uint64_t next_token = 1;
    int settled_batches = 0;

    void claim_and_open() {
        leased.start_claim(ClaimRequest{100, Millis(30000), {}, 0});
        EXPECT_TRUE(leased.settlement_due());   // on the LISTEN connection: answered at once
        auto answers = leased.collect_claims();
        ASSERT_EQ(answers.size(), 1u);
        uint64_t first = next_token;
        next_token += answers[0].messages.size();
        leased.open_batch(answers[0].lane, Batch(std::move(answers[0].messages), first, t0));
    }
    void dispatch(size_t window = 100) {
        std::vector<Batch*> open;
        leased.open_batches(open);
        for (Batch* b : open) b->dispatch(sink, window, t0);
    }
    void apply(const Outcome& o) {
        std::vector<Batch*> open;
        leased.open_batches(open);
        for (Batch* b : open) b->apply(o);
    }
    void settle() { leased.settle_finished([this](const SettleOutcome&) { ++settled_batches; }); }
};

}  // namespace

TEST(LeasedClaims, FinishedBatchesAreAckedTogetherAndTheirFailuresGivenBackOneByOne) {
    Fixture f;
    f.store.answers.push_back({msg("a1"), msg("a2")});
    f.store.answers.push_back({msg("b1"), msg("b2")});
    f.claim_and_open();
    f.dispatch(1);
    EXPECT_FALSE(f.leased.may_claim());   // a2 still waits for the sink
    f.dispatch();
    EXPECT_TRUE(f.leased.may_claim());
    f.claim_and_open();
    f.dispatch();
    EXPECT_EQ(f.leased.open_count(), 2u);
    f.apply(f.sink.answer("a1"));
    f.apply(f.sink.answer("a2", Verdict::retry, "503"));
    f.apply(f.sink.answer("b1", Verdict::dead, "400"));
    f.apply(f.sink.answer("b2"));
    EXPECT_TRUE(f.leased.settlement_due());
    f.settle();
    EXPECT_EQ(f.settled_batches, 2);
    ASSERT_EQ(f.store.ack_calls.size(), 1u);   // one once.ack for both batches
    EXPECT_EQ(f.store.ack_calls[0], (std::vector<std::string>{"a1", "b2"}));
    EXPECT_EQ(f.store.nacks, (std::vector<std::string>{"a2"}));
    EXPECT_EQ(f.store.deads, (std::vector<std::string>{"b1"}));
    EXPECT_EQ(f.metrics.acked.load(), 2u);
    EXPECT_EQ(f.metrics.nacked.load(), 1u);
    EXPECT_EQ(f.metrics.dead.load(), 1u);
    EXPECT_EQ(f.leased.open_count(), 0u);
}

TEST(LeasedClaims, AcksGatheredBeforeALostConnectionAreMadeAfterTheReconnect) {
    Fixture f;
    f.store.answers.push_back({msg("a1"), msg("a2")});
    f.claim_and_open();
    f.dispatch();
    f.apply(f.sink.answer("a1"));
    f.apply(f.sink.answer("a2", Verdict::retry, "503"));
    f.store.lose_at_nack = true;
    EXPECT_THROW(f.settle(), DbLost);
    EXPECT_TRUE(f.store.ack_calls.empty());
    EXPECT_EQ(f.leased.open_count(), 0u);      // a2 comes back when its lease runs out
    f.store.up = true;
    f.store.lose_at_nack = false;
    f.leased.flush_pending_acks();
    ASSERT_EQ(f.store.ack_calls.size(), 1u);
    EXPECT_EQ(f.store.ack_calls[0], (std::vector<std::string>{"a1"}));
    f.leased.flush_pending_acks();             // made once
    EXPECT_EQ(f.store.ack_calls.size(), 1u);
}

TEST(LeasedClaims, WhileTheDatabaseIsAwayFinishedBatchesKeepOnlyTheirAcks) {
    Fixture f;
    f.store.answers.push_back({msg("a1"), msg("a2"), msg("a3")});
    f.claim_and_open();
    f.dispatch();
    f.store.up = false;
    f.leased.stop("database connection lost");
    f.apply(f.sink.answer("a1"));
    f.apply(f.sink.answer("a2", Verdict::retry, "503"));
    f.settle();                                // the store is away: only the acks are kept
    EXPECT_EQ(f.leased.open_count(), 1u);      // a3 is still in flight
    f.apply(f.sink.answer("a3"));
    f.settle();
    EXPECT_EQ(f.leased.open_count(), 0u);
    EXPECT_EQ(f.settled_batches, 0);           // nothing was settled: the leases decide
    f.store.up = true;
    f.settle();                                // back: the kept acks first
    ASSERT_EQ(f.store.ack_calls.size(), 1u);
    EXPECT_EQ(f.store.ack_calls[0], (std::vector<std::string>{"a1", "a3"}));
    EXPECT_TRUE(f.store.nacks.empty());        // a2's lease brings it back
}

TEST(LeasedClaims, LeasesAreExtendedAtHalfTimeForWhatIsStillOpen) {
    Fixture f;
    f.store.answers.push_back({msg("a1"), msg("a2")});
    f.claim_and_open();
    f.dispatch();
    f.apply(f.sink.answer("a1"));
    f.leased.keep_claims(t0 + Millis(14999));   // (the lease of the claim: 30 s)
    EXPECT_TRUE(f.store.extended.empty());
    f.leased.keep_claims(t0 + Millis(15000));
    ASSERT_EQ(f.store.extended.size(), 1u);
    EXPECT_EQ(f.store.extended[0], (std::vector<std::string>{"a2"}));
    f.leased.keep_claims(t0 + Millis(20000));   // next one at 30 s
    EXPECT_EQ(f.store.extended.size(), 1u);
}
