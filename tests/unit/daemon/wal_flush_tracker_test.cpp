#include "wal/flush_tracker.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using once::relay::wal::FlushTracker;

TEST(WalFlushTracker, ConfirmsATransactionOnlyWhenAllItsMessagesAreSettled) {
    FlushTracker t;
    t.message_received(0x100);
    t.message_received(0x100);
    t.transaction_ended(0x100, 0x128);
    EXPECT_EQ(t.flush_position(), 0u);
    t.message_settled(0x100);
    EXPECT_EQ(t.flush_position(), 0u) << "one message of the transaction is still out";
    t.message_settled(0x100);
    EXPECT_EQ(t.flush_position(), 0x128u);
    EXPECT_EQ(t.unsettled(), 0u);
}

TEST(WalFlushTracker, WaitsForTheCommitEvenWhenEveryMessageSoFarIsSettled) {
    FlushTracker t;
    t.message_received(0x100);
    t.message_settled(0x100);
    EXPECT_EQ(t.flush_position(), 0u) << "more messages of the transaction may follow";
    t.transaction_ended(0x100, 0x128);
    EXPECT_EQ(t.flush_position(), 0x128u);
}

TEST(WalFlushTracker, AnUnsettledEarlierTransactionHoldsBackLaterSettledOnes) {
    FlushTracker t;
    for (uint64_t commit : {0x100u, 0x200u, 0x300u}) {
        t.message_received(commit);
        t.transaction_ended(commit, commit + 0x28);
    }
    t.message_settled(0x300);  // the sink acknowledged out of order
    t.message_settled(0x200);
    EXPECT_EQ(t.flush_position(), 0u) << "0x100 is not settled: confirming past it would lose it on restart";
    t.message_settled(0x100);
    EXPECT_EQ(t.flush_position(), 0x328u);
}

TEST(WalFlushTracker, TransactionsWithoutMessagesDoNotHoldAnythingBack) {
    FlushTracker t;
    t.transaction_ended(0x100, 0x128);
    EXPECT_EQ(t.flush_position(), 0x128u);
    t.message_received(0x200);
    t.transaction_ended(0x200, 0x228);
    t.transaction_ended(0x300, 0x328);  // no messages, but behind an unsettled one
    EXPECT_EQ(t.flush_position(), 0x128u);
    t.message_settled(0x200);
    EXPECT_EQ(t.flush_position(), 0x328u);
}

TEST(WalFlushTracker, IdlePositionOnlyWithNothingPending) {
    FlushTracker t;
    t.idle(0x500);
    EXPECT_EQ(t.flush_position(), 0x500u);
    t.message_received(0x600);
    t.idle(0x700);
    EXPECT_EQ(t.flush_position(), 0x500u) << "a message is unsettled";
    t.message_settled(0x600);
    t.idle(0x700);
    EXPECT_EQ(t.flush_position(), 0x500u) << "the transaction has not ended";
    t.transaction_ended(0x600, 0x628);
    t.idle(0x700);
    EXPECT_EQ(t.flush_position(), 0x700u);
    t.idle(0x650);
    EXPECT_EQ(t.flush_position(), 0x700u) << "never backwards";
}

TEST(WalFlushTracker, CallsOutOfOrderAreBugs) {
    FlushTracker t;
    EXPECT_THROW(t.message_settled(0x100), std::logic_error);
    t.message_received(0x200);
    EXPECT_THROW(t.message_received(0x100), std::logic_error);
    EXPECT_THROW(t.transaction_ended(0x100, 0x128), std::logic_error);
    t.message_settled(0x200);
    EXPECT_THROW(t.message_settled(0x200), std::logic_error);
    t.transaction_ended(0x200, 0x228);
    EXPECT_THROW(t.message_received(0x150), std::logic_error) << "below the confirmed position";
}

TEST(WalFlushTracker, TheOldestPendingCommitTimeIsThatOfTheFirstTransactionNotConfirmed) {
    FlushTracker t;
    EXPECT_FALSE(t.oldest_pending_commit_time().has_value()) << "nothing pending";
    t.message_received(0x100, 1000);
    t.transaction_ended(0x100, 0x128, 1000);
    t.message_received(0x200, 2000);
    t.transaction_ended(0x200, 0x228, 2000);
    EXPECT_EQ(t.oldest_pending_commit_time(), 1000);
    t.message_settled(0x200);
    EXPECT_EQ(t.oldest_pending_commit_time(), 1000) << "a later settled transaction does not confirm the earlier";
    t.message_settled(0x100);
    EXPECT_FALSE(t.oldest_pending_commit_time().has_value()) << "everything confirmed";
    t.message_received(0x300, 3000);   // received before its Commit: pending already
    EXPECT_EQ(t.oldest_pending_commit_time(), 3000);
}
