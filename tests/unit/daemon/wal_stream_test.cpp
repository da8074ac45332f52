// The WAL transport's source (claim/wal_stream.hpp) with a fake replication stream, a fake
// write-back store and the fake sink: what it publishes, what it writes back, and that the
// slot is confirmed only as far as the confirmation rule allows.
#include "claim/wal_stream.hpp"
#include "wal/replication_frames.hpp"
#include "test_fakes.hpp"
#include "wal_fakes.hpp"

#include <gtest/gtest.h>

using namespace once::relay;
using namespace once::relay::testing;

namespace {

struct Rig {
    WalLog wal;
    StoreLog store;
    Metrics metrics;
    FakeSink sink;
    WalStream stream{std::make_unique<FakeWalReader>(wal), std::make_unique<FakeWalStore>(store), metrics, Millis(100)};
    uint64_t next_token = 1;

    // One turn: read, claim what is queued into a batch, hand it to the sink.
    void turn() {
        stream.pump(Batch::Clock::now());
        if (stream.may_claim()) {
            stream.start_claim(ClaimRequest{100, Millis(1000), {}, 0});
            for (auto& a : stream.collect_claims()) {
                uint64_t first = next_token;
                next_token += a.messages.size();
                stream.open_batch(a.lane, Batch(std::move(a.messages), first, Batch::Clock::now()));
            }
        }
        std::vector<Batch*> open;
        stream.open_batches(open);
        for (Batch* b : open) b->dispatch(sink, 100, Batch::Clock::now());
    }
    void answer(uint8_t id, Verdict v = Verdict::delivered, const std::string& error = "",
                std::optional<Millis> retry_after = std::nullopt) {
        Outcome o = sink.answer(wal_id(id), v, error, retry_after);
        std::vector<Batch*> open;
        stream.open_batches(open);
        for (Batch* b : open)
            if (b->owns(o.token)) b->apply(o);
    }
    void settle() { stream.settle_finished([](const SettleOutcome&) {}); }
};

}  // namespace

TEST(WalStream, PublishesInWalOrderAndConfirmsOnlyWhatEveryEarlierMessageAllows) {
    Rig r;
    r.wal.reads.push_back({wal_message(1, 0x100), wal_message(2, 0x100), wal_end(0x100, 0x110),
                           wal_message(3, 0x200), wal_end(0x200, 0x210)});
    r.turn();
    EXPECT_EQ(r.wal.opens, 1);
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1), wal_id(2), wal_id(3)}));
    r.answer(3);   // acknowledged out of order: the later transaction waits for the earlier one
    r.answer(1);
    r.settle();    // (the batch is not finished: nothing settles)
    EXPECT_EQ(r.wal.confirmed, 0u);
    r.answer(2);
    r.settle();
    EXPECT_EQ(r.wal.confirmed, 0x210u);
    EXPECT_EQ(r.metrics.acked.load(), 3u);
    EXPECT_FALSE(r.wal.statuses.empty());   // the new position is reported at once
    EXPECT_EQ(r.wal.statuses.back(), 0x210u);
}

TEST(WalStream, AMessageTheSinkRefusesIsWrittenBackThenSettled) {
    Rig r;
    r.wal.reads.push_back({wal_message(1, 0x100), wal_message(2, 0x100), wal_message(3, 0x100), wal_end(0x100, 0x110)});
    r.turn();
    r.answer(1, Verdict::retry, "503");
    r.answer(2, Verdict::dead, "400 bad");
    r.answer(3);
    r.store.fail_writes = 1;   // the database is away: nothing is confirmed past the refused message
    r.settle();
    EXPECT_EQ(r.wal.confirmed, 0u);
    EXPECT_TRUE(r.store.written_back.empty());
    EXPECT_EQ(r.stream.open_count(), 1u);
}

TEST(WalStream, AWrittenBackMessageCountsAsSettled) {
    Rig r;
    r.wal.reads.push_back({wal_message(1, 0x100), wal_message(2, 0x100), wal_message(3, 0x100), wal_end(0x100, 0x110)});
    r.turn();
    r.answer(1, Verdict::retry, "503");
    r.answer(2, Verdict::dead, "400 bad");
    r.answer(3);
    r.settle();
    EXPECT_EQ(r.store.written_back,
              (std::vector<std::string>{wal_id(1) + " retry 1 503", wal_id(2) + " dead 1 400 bad"}));
    EXPECT_EQ(r.wal.confirmed, 0x110u);
    EXPECT_EQ(r.metrics.wal_written_back.load(), 2u);
    EXPECT_EQ(r.metrics.nacked.load(), 1u);
    EXPECT_EQ(r.metrics.dead.load(), 1u);
    EXPECT_EQ(r.stream.open_count(), 0u);
}

TEST(WalStream, SkipsMalformedAndUnauthenticMessagesWithoutHoldingTheSlot) {
    Rig r;
    r.wal.reads.push_back({wal::MalformedMessageEvent{0x100, 0x0f8, "truncated", false},
                           wal::MalformedMessageEvent{0x100, 0x0f9, "its tag does not verify", true},
                           wal_end(0x100, 0x110)});
    r.turn();
    EXPECT_TRUE(r.sink.submitted.empty());
    EXPECT_EQ(r.metrics.wal_malformed.load(), 1u);
    EXPECT_EQ(r.metrics.wal_unauthentic.load(), 1u);
    EXPECT_EQ(r.wal.confirmed, 0x110u);
}

TEST(WalStream, AnIdleStreamConfirmsTheKeepalivePositionOnlyWithNothingUnsettled) {
    Rig r;
    r.wal.reads.push_back({wal_message(1, 0x100), wal_end(0x100, 0x110)});
    r.wal.idle = 0x500;
    r.turn();
    EXPECT_EQ(r.wal.confirmed, 0u);   // message 1 is in flight
    r.answer(1);
    r.settle();
    r.turn();
    EXPECT_EQ(r.wal.confirmed, 0x500u);
}

TEST(WalStream, MessagesHandedBackUnsentArePublishedAgain) {
    Rig r;
    r.wal.reads.push_back({wal_message(1, 0x100), wal_end(0x100, 0x110)});
    r.stream.pump(Batch::Clock::now());
    r.stream.start_claim(ClaimRequest{100, Millis(1000), {}, 0});
    auto answers = r.stream.collect_claims();
    ASSERT_EQ(answers.size(), 1u);
    Batch b(std::move(answers[0].messages), 1, Batch::Clock::now());
    b.stop("database connection lost");
    r.stream.open_batch(0, std::move(b));
    r.settle();
    EXPECT_EQ(r.wal.confirmed, 0u);
    EXPECT_EQ(r.stream.queued(), 1u);
    r.next_token = 10;
    r.turn();
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1)}));
    r.answer(1);
    r.settle();
    EXPECT_EQ(r.wal.confirmed, 0x110u);
}

TEST(WalStream, ALostStreamReopensAndForgetsWhatWasUnsettled) {
    Rig r;
    r.wal.reads.push_back({wal_message(1, 0x100), wal_end(0x100, 0x110)});
    r.turn();
    r.wal.fail_next_read = true;
    r.turn();   // lost: the open batch is forgotten
    EXPECT_EQ(r.stream.open_count(), 0u);
    EXPECT_FALSE(r.stream.is_open());
    // Reopened after the backoff, from the confirmed position: message 1 comes again.
    auto deadline = Batch::Clock::now() + std::chrono::seconds(5);
    while (!r.stream.is_open() && Batch::Clock::now() < deadline) r.stream.pump(Batch::Clock::now());
    ASSERT_TRUE(r.stream.is_open());
    EXPECT_EQ(r.wal.opens, 2);
    EXPECT_EQ(r.metrics.wal_stream_restarts.load(), 1u);
    r.wal.reads.push_back({wal_message(1, 0x100), wal_end(0x100, 0x110)});
    std::vector<Outcome> orphaned;   // (the publish of the forgotten batch)
    r.sink.abandon(orphaned);
    r.turn();
    r.answer(1);
    r.settle();
    EXPECT_EQ(r.wal.confirmed, 0x110u);
}

TEST(WalStream, OpensWithTheDatabasesMessageKey) {
    Rig r;
    r.store.key = std::string(32, 'q');
    r.turn();
    ASSERT_EQ(r.wal.keys.size(), 1u);
    EXPECT_EQ(r.wal.keys[0], std::string(32, 'q'));
}

TEST(WalStream, StaysClosedWithoutAKeyRatherThanPublishUnauthenticatedMessages) {
    Rig r;
    r.store.key = std::nullopt;   // pg_once older than 0.3: no once.wal_secret()
    r.turn();
    r.turn();
    EXPECT_EQ(r.wal.opens, 0);
    EXPECT_TRUE(r.sink.submitted.empty());
}

TEST(WalStream, RelayMessageCarriesIdTopicKeyHeadersAndCreatedAt) {
    once::WalMessage m;
    m.id.fill(0xab);
    m.created_at_us = 1'700'000'000'123'456;
    m.topic = "orders";
    m.key = "k1";
    m.headers = "{\"a\": 1}";
    m.payload = "[1]";
    Message r = relay_message(std::move(m));
    EXPECT_EQ(r.id, wal_id(0xab));
    EXPECT_EQ(r.topic, "orders");
    EXPECT_TRUE(r.has_key);
    EXPECT_EQ(r.key, "k1");
    EXPECT_EQ(r.headers, "{\"a\": 1}");
    EXPECT_EQ(r.payload, "[1]");
    EXPECT_EQ(r.attempt, 1);
    EXPECT_EQ(r.created_at, "2023-11-14 22:13:20.123456+00");
}

TEST(WalStream, RelayMessageCreatedAtIsUtcWithMicroseconds) {
    auto created_at = [](int64_t us) {
        once::WalMessage m;
        m.created_at_us = us;
        m.topic = "t";
        m.payload = "{}";
        return relay_message(std::move(m)).created_at;
    };
    EXPECT_EQ(created_at(0), "1970-01-01 00:00:00.000000+00");
    EXPECT_EQ(created_at(-1), "1969-12-31 23:59:59.999999+00");
    EXPECT_EQ(created_at(951'782'400'000'007), "2000-02-29 00:00:00.000007+00");
    EXPECT_EQ(created_at(253'402'300'799'999'999), "9999-12-31 23:59:59.999999+00");
}

TEST(WalStream, StopsReadingWhileTheQueueIsFull) {
    Rig r;
    std::vector<once::relay::wal::WalEvent> many;
    for (size_t i = 0; i < WalStream::kMaxQueued; ++i) many.push_back(wal_message(1, 0x100 + i * 0x10));
    r.wal.reads.push_back(std::move(many));
    r.wal.reads.push_back({wal_message(2, 0x100000)});
    r.stream.pump(Batch::Clock::now());
    EXPECT_EQ(r.stream.queued(), WalStream::kMaxQueued);
    r.stream.pump(Batch::Clock::now());   // full: the next group is not read
    EXPECT_EQ(r.stream.queued(), WalStream::kMaxQueued);
    EXPECT_EQ(r.wal.reads.size(), 1u);
}

TEST(WalStream, StandsByWhileAnotherConnectionStreamsTheSlotThenTakesOver) {
    Rig r;
    r.wal.slot_in_use = 2;   // another relay of the group streams the slot, then dies
    r.turn();
    EXPECT_FALSE(r.stream.is_open());
    EXPECT_TRUE(r.stream.standing_by());
    EXPECT_EQ(r.metrics.wal_stream_active.load(), 0);
    EXPECT_EQ(r.metrics.wal_stream_restarts.load(), 0u);   // standing by is no failure
    auto deadline = Batch::Clock::now() + std::chrono::seconds(5);
    while (!r.stream.is_open() && Batch::Clock::now() < deadline) r.stream.pump(Batch::Clock::now());
    ASSERT_TRUE(r.stream.is_open());
    EXPECT_FALSE(r.stream.standing_by());
    EXPECT_EQ(r.metrics.wal_stream_active.load(), 1);
    EXPECT_EQ(r.wal.slot_in_use, 0);
    r.wal.reads.push_back({wal_message(1, 0x100), wal_end(0x100, 0x110)});
    r.turn();
    r.answer(1);
    r.settle();
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1)}));
    EXPECT_EQ(r.wal.confirmed, 0x110u);
}

TEST(WalStream, TriesTheSlotNoMoreThanOnceASecondWhileStandingBy) {
    WalLog wal;
    StoreLog store;
    Metrics metrics;
    WalStream stream{std::make_unique<FakeWalReader>(wal), std::make_unique<FakeWalStore>(store), metrics,
                     std::chrono::seconds(30)};
    wal.slot_in_use = 100;
    auto t0 = Batch::Clock::now();
    for (int ms = 0; ms < 2500; ms += 50) stream.pump(t0 + std::chrono::milliseconds(ms));
    EXPECT_EQ(100 - wal.slot_in_use, 3);   // at 0, 1 s and 2 s: not the failure backoff's 30 s cap
    EXPECT_TRUE(stream.standing_by());
}

TEST(WalStream, PassesOverTheTopicsItDoesNotServe) {
    Rig r;
    r.stream.set_topics({"a.>"});
    r.wal.reads.push_back({wal_message(1, 0x100, "a.x"), wal_message(2, 0x100, "b.y"), wal_end(0x100, 0x110),
                           wal_message(3, 0x200, "b.y"), wal_end(0x200, 0x210)});
    r.turn();
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1)}));
    EXPECT_EQ(r.metrics.wal_passed_over.load(), 2u);
    EXPECT_EQ(r.wal.confirmed, 0u);   // message 1 is in flight
    r.answer(1);
    r.settle();
    EXPECT_EQ(r.wal.confirmed, 0x210u);   // the second transaction had nothing for this relay
}

TEST(WalStream, AnInvalidatedSlotKeepsTheStreamClosedFailsHealthAndIsNeverRecreated) {
    Rig r;
    r.metrics.db_connected = true;
    r.metrics.sink_connected = true;
    EXPECT_TRUE(r.metrics.healthy());
    r.store.slot.wal_status = "lost";
    r.turn();
    r.turn();
    EXPECT_EQ(r.wal.opens, 0) << "no START_REPLICATION on a lost slot";
    EXPECT_EQ(r.stream.slot_verdict(), once::relay::wal::SlotVerdict::lost);
    EXPECT_EQ(r.metrics.wal_slot_verdict.load(), 2);
    EXPECT_FALSE(r.metrics.healthy());
    std::string m = r.metrics.render_prometheus("r");
    EXPECT_NE(m.find("once_wal_slot_invalidated 1"), std::string::npos) << m;
    EXPECT_EQ(r.store.slot_reads, 1) << "looked at again only after kSlotRecheck";
}

TEST(WalStream, AMissingSlotIsTheSameStateAndARecreatedOneIsStreamedAgain) {
    Rig r;
    r.store.slot.exists = false;
    auto t0 = Batch::Clock::now();
    r.stream.pump(t0);
    EXPECT_EQ(r.stream.slot_verdict(), once::relay::wal::SlotVerdict::missing);
    EXPECT_EQ(r.metrics.wal_slot_verdict.load(), 1);
    r.store.slot.exists = true;   // the operator ran --create-wal-slot
    r.stream.pump(t0 + std::chrono::seconds(1));
    EXPECT_EQ(r.wal.opens, 0) << "not before the recheck";
    r.stream.pump(t0 + WalStream::kSlotRecheck + std::chrono::seconds(1));
    EXPECT_EQ(r.wal.opens, 1);
    EXPECT_EQ(r.metrics.wal_slot_verdict.load(), 0);
}

TEST(WalStream, PhysicalStandbysBefore17RefuseTheStreamUnlessAccepted) {
    Rig r;
    r.store.slot.physical_senders = 1;
    r.turn();
    EXPECT_EQ(r.wal.opens, 0);
    EXPECT_EQ(r.metrics.wal_slot_verdict.load(), 3);
    EXPECT_NE(r.metrics.render_prometheus("r").find("once_wal_failover_refused 1"), std::string::npos);

    WalLog wal;
    StoreLog store;
    store.slot.physical_senders = 1;
    Metrics metrics;
    WalStream accepting{std::make_unique<FakeWalReader>(wal), std::make_unique<FakeWalStore>(store), metrics,
                        Millis(100), {}, true};
    accepting.pump(Batch::Clock::now());
    EXPECT_EQ(wal.opens, 1);
    EXPECT_EQ(metrics.wal_slot_verdict.load(), 0);
}

TEST(WalStream, LagSecondsIsTheAgeOfTheOldestUnconfirmedCommitAndZeroWhenNothingIsPending) {
    Rig r;
    auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count();
    int64_t commit = now_us - once::relay::wal::kPgEpochOffsetUs - 30'000'000;   // committed 30 s ago
    r.wal.reads.push_back({wal_message(1, 0x100, "t", commit), wal_end(0x100, 0x110)});
    r.turn();
    EXPECT_EQ(r.metrics.wal_oldest_pending_commit_us.load(), commit + once::relay::wal::kPgEpochOffsetUs);
    std::string m = r.metrics.render_prometheus("r");
    auto at = m.find("\nonce_wal_slot_lag_seconds ");
    ASSERT_NE(at, std::string::npos) << m;
    double lag = std::stod(m.substr(at + 27));
    EXPECT_GE(lag, 30.0);
    EXPECT_LT(lag, 60.0);
    r.answer(1);
    r.settle();
    EXPECT_EQ(r.metrics.wal_oldest_pending_commit_us.load(), 0);
    EXPECT_NE(r.metrics.render_prometheus("r").find("once_wal_slot_lag_seconds 0\n"), std::string::npos);
}

// ---------------------------------------------------------------------------- keyed messages

TEST(WalStream, NeverTwoMessagesOfAKeyInFlight) {
    Rig r;
    r.wal.reads.push_back({wal_keyed(1, 0x100, "a"), wal_keyed(2, 0x100, "b"), wal_keyed(3, 0x100, "a"),
                           wal_keyed(4, 0x100, "a", 11), wal_end(0x100, 0x110)});
    r.turn();
    // The claim ends before the second message of (a, 10); (a, 11) is another role's order.
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1), wal_id(2)}));
    EXPECT_FALSE(r.stream.may_claim()) << "the queue's front waits for its key";
    r.answer(1);
    r.answer(2);
    r.settle();
    r.turn();
    // (a, 11) is claimed with (a, 10); the batch, which knows keys and not owners, sends it
    // once (a, 10) is answered.
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1), wal_id(2), wal_id(3)}));
    r.answer(3);
    r.turn();
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1), wal_id(2), wal_id(3), wal_id(4)}));
    r.answer(4);
    r.settle();
    EXPECT_EQ(r.wal.confirmed, 0x110u);
}

TEST(WalStream, AKeyedRefusalIsWrittenBackWithItsOrderAndLaterMessagesOfTheKeyFollowIt) {
    Rig r;
    r.wal.reads.push_back({wal_keyed(1, 0x100, "a"), wal_end(0x100, 0x110), wal_keyed(2, 0x200, "a"),
                           wal_keyed(3, 0x200, "b"), wal_end(0x200, 0x210)});
    r.turn();
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1)}));
    r.answer(1, Verdict::retry, "503");
    r.settle();
    ASSERT_EQ(r.store.written_back_orders.size(), 1u);
    once::Uuid seq;
    seq.fill(1);
    EXPECT_EQ(r.store.written_back_orders[0], "a 10 " + once::uuid_to_string(seq))
        << "key, key_owner and the carried key_seq";
    r.turn();
    // Message 2 of key a is not published: the table holds a message of a.
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1), wal_id(3)}));
    ASSERT_EQ(r.store.written_back.size(), 2u);
    EXPECT_EQ(r.store.written_back[1], wal_id(2) + " retry 0 behind an earlier message of its key in the outbox table");
    r.answer(3);
    r.settle();
    EXPECT_EQ(r.wal.confirmed, 0x210u);
}

TEST(WalStream, AKeyIsPublishedAgainOnceTheTableHoldsNoneOfIt) {
    Rig r;
    r.wal.reads.push_back({wal_keyed(1, 0x100, "a"), wal_end(0x100, 0x110)});
    r.turn();
    r.answer(1, Verdict::dead, "400");
    r.settle();
    r.store.in_table.clear();   // the dead letter was discarded
    r.wal.reads.push_back({wal_keyed(2, 0x200, "a"), wal_end(0x200, 0x210)});
    r.turn();
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1), wal_id(2)}));
    EXPECT_EQ(r.store.key_checks, 1);
    r.wal.reads.push_back({wal_keyed(3, 0x300, "a"), wal_end(0x300, 0x310)});
    r.answer(2);
    r.settle();
    r.turn();
    EXPECT_EQ(r.store.key_checks, 1) << "the key was forgotten: no more checks";
    EXPECT_EQ(r.sink.submitted.back(), wal_id(3));
}

TEST(WalStream, FencesAreReleasedAtStartAndUpToEachConfirmation) {
    Rig r;
    r.store.fenced = 1;                                // a fence left by a relay killed before confirming
    r.store.fenced_keys = {{"a", 10}};
    r.store.in_table = {{"a", 10}};
    r.wal.reads.push_back({wal_keyed(1, 0x100, "a"), wal_end(0x100, 0x110)});
    r.turn();
    ASSERT_FALSE(r.store.releases.empty());
    EXPECT_FALSE(r.store.releases[0].has_value()) << "at start: up to the slot's confirmed position";
    EXPECT_TRUE(r.sink.submitted.empty()) << "a stream message of a fenced key follows it into the table";
    ASSERT_EQ(r.store.written_back.size(), 1u);
    r.settle();
    EXPECT_EQ(r.wal.confirmed, 0x110u);
    ASSERT_GE(r.store.releases.size(), 2u);
    EXPECT_EQ(r.store.releases.back(), std::optional<wal::Lsn>(0x110u)) << "released up to the confirmed position";
    r.store.fenced = 0;
    r.wal.reads.push_back({wal_keyed(2, 0x200, "b"), wal_end(0x200, 0x210)});
    r.turn();
    r.answer(2);
    r.settle();
    r.stream.pump(Batch::Clock::now() + std::chrono::seconds(1));   // the next status update
    EXPECT_EQ(r.store.releases.back(), std::optional<wal::Lsn>(0x210u));
    const size_t releases = r.store.releases.size();
    r.wal.reads.push_back({wal_keyed(3, 0x300, "b"), wal_end(0x300, 0x310)});
    r.turn();
    r.answer(3);
    r.settle();
    r.stream.pump(Batch::Clock::now() + std::chrono::seconds(2));
    EXPECT_EQ(r.wal.statuses.back(), 0x310u);
    EXPECT_EQ(r.store.releases.size(), releases) << "no fence left: no more calls";
}

TEST(WalStream, WithFencesLeftAnIdleStreamAsksForAKeepalive) {
    Rig r;
    r.store.fenced = 1;
    r.turn();
    r.wal.statuses.clear();
    r.stream.pump(Batch::Clock::now() + std::chrono::seconds(1));   // a status interval later
    EXPECT_FALSE(r.wal.statuses.empty()) << "a status update asking for a reply";
    r.wal.idle = 0x500;   // the keepalive's position: confirmed, and the fences released up to it
    r.stream.pump(Batch::Clock::now() + std::chrono::seconds(2));
    EXPECT_EQ(r.wal.confirmed, 0x500u);
    EXPECT_EQ(r.store.releases.back(), std::optional<wal::Lsn>(0x500u));
}

TEST(WalStream, AFailedWriteBackBehindItsKeyHoldsTheQueue) {
    Rig r;
    r.wal.reads.push_back({wal_keyed(1, 0x100, "a"), wal_end(0x100, 0x110)});
    r.turn();
    r.answer(1, Verdict::retry, "503");
    r.settle();
    r.wal.reads.push_back({wal_keyed(2, 0x200, "a"), wal_end(0x200, 0x210)});
    r.store.fail_writes = 1;
    r.turn();
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1)}));
    EXPECT_EQ(r.stream.queued(), 1u) << "message 2 stays queued";
    EXPECT_EQ(r.store.written_back.size(), 1u);
}

// A prepared transaction holding the key's lock bucket: the write-back gives up at once
// (WalWriteBackBusy) and waits aside, retried every second, while the stream goes on; the
// confirmation stops before it and the key's later messages wait behind it.
TEST(WalStream, AWriteBackWhoseKeysLockIsHeldWaitsAsideWhileTheStreamGoesOn) {
    Rig r;
    r.store.busy = true;
    r.wal.reads.push_back({wal_keyed(1, 0x100, "a"), wal_message(2, 0x100), wal_end(0x100, 0x110)});
    r.turn();
    r.answer(1, Verdict::retry, "503");
    r.answer(2);
    r.settle();
    EXPECT_TRUE(r.store.written_back.empty());
    EXPECT_EQ(r.store.busy_tries, 1);
    EXPECT_EQ(r.stream.open_count(), 0u) << "the batch is done with";
    EXPECT_EQ(r.metrics.wal_write_backs_waiting.load(), 1);
    EXPECT_EQ(r.wal.confirmed, 0u) << "not confirmed past the waiting message";
    // Other messages are published meanwhile; a later message of key a waits behind it.
    r.wal.reads.push_back({wal_message(3, 0x200), wal_end(0x200, 0x210), wal_keyed(4, 0x300, "a"),
                           wal_message(5, 0x300), wal_end(0x300, 0x310)});
    r.turn();
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1), wal_id(2), wal_id(3)}));
    r.answer(3);
    r.settle();
    EXPECT_EQ(r.wal.confirmed, 0u);
    const auto t0 = Batch::Clock::now();
    r.stream.pump(t0);   // not due yet: no retry
    EXPECT_EQ(r.store.busy_tries, 1);
    r.stream.pump(t0 + std::chrono::seconds(2));   // due, still held
    EXPECT_EQ(r.store.busy_tries, 2);
    EXPECT_TRUE(r.store.written_back.empty());
    r.store.busy = false;   // COMMIT PREPARED
    r.stream.pump(t0 + std::chrono::seconds(4));
    ASSERT_EQ(r.store.written_back, (std::vector<std::string>{wal_id(1) + " retry 1 503"}));
    EXPECT_EQ(r.metrics.wal_write_backs_waiting.load(), 0);
    EXPECT_EQ(r.metrics.nacked.load(), 1u);
    EXPECT_EQ(r.wal.confirmed, 0x210u) << "confirmed up to the next unsettled message";
    // Message 4 now follows message 1 into the table (its key is in the table); 5 is published.
    r.turn();
    EXPECT_EQ(r.store.written_back.size(), 2u);
    EXPECT_EQ(r.store.written_back[1], wal_id(4) + " retry 0 behind an earlier message of its key in the outbox table");
    EXPECT_EQ(r.sink.submitted.back(), wal_id(5));
}

// The same for a message written back behind its key: it leaves the queue's front and waits
// aside with its key in flight, so the messages of other keys behind it are published.
TEST(WalStream, AWriteBackBehindItsKeyWhoseLockIsHeldWaitsAsideToo) {
    Rig r;
    r.wal.reads.push_back({wal_keyed(1, 0x100, "a"), wal_end(0x100, 0x110)});
    r.turn();
    r.answer(1, Verdict::retry, "503");
    r.settle();
    ASSERT_EQ(r.store.written_back.size(), 1u);
    r.store.busy = true;
    r.wal.reads.push_back({wal_keyed(2, 0x200, "a"), wal_keyed(3, 0x200, "b"), wal_end(0x200, 0x210)});
    r.turn();
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1), wal_id(3)}));
    EXPECT_EQ(r.metrics.wal_write_backs_waiting.load(), 1);
    r.answer(3);
    r.settle();
    EXPECT_EQ(r.wal.confirmed, 0x110u);
    r.store.busy = false;
    r.stream.pump(Batch::Clock::now() + std::chrono::seconds(2));
    ASSERT_EQ(r.store.written_back.size(), 2u);
    EXPECT_EQ(r.store.written_back[1], wal_id(2) + " retry 0 behind an earlier message of its key in the outbox table");
    EXPECT_EQ(r.metrics.nacked.load(), 1u) << "(only the sink's refusal counts as nacked)";
    EXPECT_EQ(r.wal.confirmed, 0x210u);
}

TEST(WalStream, AWriteBackWaitingForItsKeysLockIsForgottenWhenTheStreamResets) {
    Rig r;
    r.store.busy = true;
    r.wal.reads.push_back({wal_keyed(1, 0x100, "a"), wal_end(0x100, 0x110)});
    r.turn();
    r.answer(1, Verdict::retry, "503");
    r.settle();
    EXPECT_EQ(r.metrics.wal_write_backs_waiting.load(), 1);
    r.wal.fail_next_read = true;
    r.stream.pump(Batch::Clock::now());   // (not due: the read fails and the stream resets)
    EXPECT_EQ(r.metrics.wal_write_backs_waiting.load(), 0) << "unconfirmed: the message comes again";
    r.store.busy = false;
    r.stream.pump(Batch::Clock::now() + std::chrono::seconds(5));
    EXPECT_TRUE(r.store.written_back.empty());
}

TEST(WalStream, RelayKeyOrderCarriesOwnerAndSeq) {
    once::WalMessage m;
    m.key = "k";
    m.key_owner = 16385;
    m.key_seq.fill(0xAB);
    WalKeyOrder o = relay_key_order(m);
    EXPECT_EQ(o.key_owner, 16385u);
    EXPECT_EQ(o.key_seq, once::uuid_to_string(m.key_seq));
    m.key.reset();
    EXPECT_EQ(relay_key_order(m).key_seq, "");
}

TEST(WalStream, StopsBeforeAMessageOfANewerFormatAndConfirmsNothingPastIt) {
    Rig r;
    r.wal.reads.push_back({wal_message(1, 0x100), wal_end(0x100, 0x110), wal_message(2, 0x200),
                           wal::NewerFormatEvent{0x200, 0x1f8, 3, "pg_once WAL message has format version 3"},
                           wal_message(3, 0x200), wal_end(0x200, 0x210), wal_message(4, 0x300), wal_end(0x300, 0x310)});
    r.wal.reads.push_back({wal_message(5, 0x400), wal_end(0x400, 0x410)});   // (never read)
    r.wal.idle = 0x500;   // a keepalive past everything
    r.turn();
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1), wal_id(2)}));   // what came before it
    EXPECT_EQ(r.metrics.wal_newer_format.load(), 3);
    EXPECT_FALSE(r.metrics.healthy());
    r.answer(1);
    r.answer(2);
    r.settle();
    for (int i = 0; i < 3; ++i) r.turn();
    EXPECT_EQ(r.sink.submitted.size(), 2u);   // nothing after it, however long
    EXPECT_EQ(r.wal.confirmed, 0x110u);       // not its transaction, nor the idle position
    EXPECT_EQ(r.wal.reads.size(), 1u);        // the stream is read no further
}

TEST(WalStream, ARetryIsWrittenBackWithTheSinksRetryAfter) {
    Rig r;
    r.wal.reads.push_back({wal_message(1, 0x100), wal_message(2, 0x100), wal_end(0x100, 0x110)});
    r.turn();
    r.answer(1, Verdict::retry, "503", Millis(2000));
    r.answer(2, Verdict::retry, "503");
    r.settle();
    ASSERT_EQ(r.store.written_back_retry_after.size(), 2u);
    EXPECT_EQ(r.store.written_back_retry_after[0], std::optional<Millis>(Millis(2000)));
    EXPECT_EQ(r.store.written_back_retry_after[1], std::nullopt);   // the topic's backoff
}

TEST(WalStream, PublishesAMessageOnlyOnceItsTransactionIsVisibleToOtherSessions) {
    Rig r;
    r.wal.reads.push_back({wal_message(1, 0x100), wal_end(0x100, 0x110), wal_message(2, 0x200), wal_end(0x200, 0x210),
                           wal_message(3, 0x300), wal_end(0x300, 0x310)});
    // Transaction 2 is committed and flushed (the stream has it) but still in the running set.
    r.store.snapshots = {"1:4:2"};
    r.turn();
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1)}));   // not 3 either: it comes after 2
    EXPECT_EQ(r.store.snapshot_reads, 1);
    r.answer(1);
    r.settle();
    r.turn();   // a new snapshot: 2 has left the running set
    EXPECT_EQ(r.sink.submitted, (std::vector<std::string>{wal_id(1), wal_id(2), wal_id(3)}));
    EXPECT_EQ(r.store.snapshot_reads, 2);
}

TEST(WalStream, ClaimsNothingWhileTheSnapshotCannotBeRead) {
    Rig r;
    r.wal.reads.push_back({wal_message(1, 0x100), wal_end(0x100, 0x110)});
    r.store.snapshots = {"throw"};
    r.turn();
    EXPECT_TRUE(r.sink.submitted.empty());
    EXPECT_FALSE(r.stream.may_claim());   // (retried after a second, as a failed write-back)
}
