// Batch: the per-message state of one claimed batch, driven against a fake sink that answers
// when and in whatever order the test says.
#include "batch.hpp"
#include "sinks/sink.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace once::relay;
using State = Batch::State;

namespace {

class FakeSink final : public Sink {
public:
    const char* kind() const override { return "fake"; }
    std::string describe() const override { return "fake:"; }
    void open() override {}
    bool ready() override { return true; }
    void submit(uint64_t token, const Message& m) override {
        submitted.push_back(m.id);
        open_[m.id] = token;
    }
    void poll_fds(std::vector<pollfd>&) override {}
    void process(const pollfd*, size_t, std::vector<Outcome>&) override {}
    size_t in_flight() const override { return open_.size(); }
    void abandon(std::vector<Outcome>& out) override {
        for (auto& [id, token] : open_) out.push_back(Outcome{token, Verdict::retry, "abandoned", std::nullopt});
        open_.clear();
    }
    // The sink's answer for message `id`.
    Outcome answer(const std::string& id, Verdict v = Verdict::delivered, std::string error = "",
                   std::optional<Millis> retry_after = std::nullopt) {
        auto it = open_.find(id);
        EXPECT_NE(it, open_.end()) << id << " is not in flight";
        Outcome o{it->second, v, std::move(error), retry_after};
        open_.erase(it);
        return o;
    }
    std::vector<std::string> submitted;

private:
    std::map<std::string, uint64_t> open_;
};

Message msg(const std::string& id, const char* key = nullptr) {
    Message m;
    m.id = id;
    m.topic = "t";
    m.payload = "{}";
    if (key) { m.key = key; m.has_key = true; }
    return m;
}

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
