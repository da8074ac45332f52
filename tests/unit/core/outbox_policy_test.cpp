#include "core/error.hpp"
#include "core/outbox_policy.hpp"

#include <gtest/gtest.h>

using namespace once;

TEST(OutboxPolicy, NackRetriesWithinTheBackoffWindow) {
    RetryPolicy p;
    p.max_attempts = 5;
    p.backoff = {1000, 8000};
    for (int attempt = 1; attempt < 5; ++attempt) {
        NackDecision d = decide_nack(p, attempt, std::nullopt, 0.999);
        EXPECT_FALSE(d.dead);
        EXPECT_LE(d.delay_ms, backoff_window_ms(p.backoff, attempt));
        EXPECT_GE(d.delay_ms, 0);
    }
    EXPECT_EQ(decide_nack(p, 1, std::nullopt, 0.0).delay_ms, 0);  // full jitter starts at 0
    EXPECT_EQ(decide_nack(p, 4, std::nullopt, 0.999).delay_ms, 7992);  // window capped at 8 s
}

TEST(OutboxPolicy, DeadAfterMaxAttempts) {
    RetryPolicy p;
    p.max_attempts = 3;
    EXPECT_FALSE(decide_nack(p, 2, std::nullopt, 0.5).dead);
    EXPECT_TRUE(decide_nack(p, 3, std::nullopt, 0.5).dead);
    EXPECT_TRUE(decide_nack(p, 30, std::nullopt, 0.5).dead);
    // an explicit retry_after does not keep a poison message alive
    EXPECT_TRUE(decide_nack(p, 3, int64_t{10}, 0.5).dead);
}

TEST(OutboxPolicy, ExplicitRetryAfterWins) {
    RetryPolicy p;
    EXPECT_EQ(decide_nack(p, 1, int64_t{120000}, 0.9).delay_ms, 120000);
    EXPECT_EQ(decide_nack(p, 1, int64_t{-5}, 0.9).delay_ms, 0);
}

TEST(OutboxPolicy, PolicyValidation) {
    RetryPolicy p;
    EXPECT_NO_THROW(validate_policy(p));
    p.max_attempts = 0;
    EXPECT_THROW(validate_policy(p), Error);
    p = RetryPolicy{};
    p.backoff = {2000, 1000};
    try {
        validate_policy(p);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::invalid_policy);
    }
}

TEST(OutboxPolicy, BatchAndNames) {
    EXPECT_NO_THROW(validate_batch(1));
    EXPECT_NO_THROW(validate_batch(kMaxClaimBatch));
    EXPECT_THROW(validate_batch(0), Error);
    EXPECT_THROW(validate_batch(kMaxClaimBatch + 1), Error);
    EXPECT_NO_THROW(validate_relay("relay-1@host"));
    EXPECT_THROW(validate_relay(""), Error);
    EXPECT_THROW(validate_relay(std::string(256, 'r')), Error);
    EXPECT_THROW(validate_message_key("a\nb"), Error);
    try {
        validate_message_key("");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::invalid_message_key);
    }
}

TEST(OutboxPolicy, FloorSortsBeforeEveryIdOfItsMillisecond) {
    UuidV7Generator gen;
    std::array<uint8_t, 10> zero{};
    Uuid id = gen.next(1700000000123, zero);
    EXPECT_LE(uuid_v7_floor(1700000000123), id);
    EXPECT_GT(uuid_v7_floor(1700000000124), id);
    EXPECT_EQ(uuid_v7_unix_ms(uuid_v7_floor(1700000000123)), 1700000000123u);
    std::array<uint8_t, 10> ff;
    ff.fill(0xFF);
    Uuid at = uuid_v7_at(1700000000999, ff);
    EXPECT_EQ(uuid_v7_unix_ms(at), 1700000000999u);
    EXPECT_EQ(at[6] >> 4, 7);
    EXPECT_EQ(at[8] >> 6, 2);
}

TEST(OutboxPolicy, SuccessorIsGreaterAndStaysV7) {
    std::array<uint8_t, 10> r{};
    r.fill(0x11);
    Uuid id = uuid_v7_at(1700000000000, r);
    Uuid next = uuid_v7_successor(id);
    EXPECT_GT(next, id);
    EXPECT_EQ(next[6] >> 4, 7);
    EXPECT_EQ(next[8] >> 6, 2);
    // carry out of the random bits into the counter
    Uuid full = uuid_v7_floor(1700000000000);
    full[8] = 0xBF;
    for (int i = 9; i < 16; ++i) full[i] = 0xFF;
    Uuid carried = uuid_v7_successor(full);
    EXPECT_GT(carried, full);
    EXPECT_EQ(carried[8], 0x80);
    EXPECT_EQ(carried[7], 1);
    // carry out of the counter into the timestamp
    Uuid top = full;
    top[6] = 0x7F;
    top[7] = 0xFF;
    Uuid ms = uuid_v7_successor(top);
    EXPECT_GT(ms, top);
    EXPECT_EQ(uuid_v7_unix_ms(ms), 1700000000001u);
    EXPECT_EQ(ms[6], 0x70);
}

TEST(OutboxPolicy, KeySeqsAfterKeepsSendOrderAndPassesTheLastCommitted) {
    std::array<uint8_t, 10> r{};
    Uuid a = uuid_v7_at(1700000000010, r), b = uuid_v7_at(1700000000020, r), c = uuid_v7_at(1700000000030, r);
    // nobody overtook: nothing changes
    EXPECT_EQ(key_seqs_after(std::nullopt, {a, b, c}), (std::vector<Uuid>{a, b, c}));
    EXPECT_EQ(key_seqs_after(uuid_v7_at(1700000000005, r), {a, b, c}), (std::vector<Uuid>{a, b, c}));
    // another transaction committed a later key_seq (it sent after us, committed before us)
    Uuid last = uuid_v7_at(1700000000025, r);
    std::vector<Uuid> got = key_seqs_after(last, {a, b, c});
    ASSERT_EQ(got.size(), 3u);
    EXPECT_GT(got[0], last);
    EXPECT_GT(got[1], got[0]);
    EXPECT_EQ(got[1], uuid_v7_successor(got[0]));
    EXPECT_EQ(got[2], c);  // already after the rewritten ones: kept
    // all overtaken
    Uuid later = uuid_v7_at(1700000000099, r);
    got = key_seqs_after(later, {a, b, c});
    EXPECT_EQ(got, (std::vector<Uuid>{uuid_v7_successor(later), uuid_v7_successor(uuid_v7_successor(later)),
                                      uuid_v7_successor(uuid_v7_successor(uuid_v7_successor(later)))}));
    EXPECT_TRUE(key_seqs_after(later, {}).empty());
}

TEST(OutboxPolicy, WaitingMessagesLieAfterEveryClaimPosition) {
    // after the position of the latest deliver_at once.send accepts (10 years) and any v7 id
    std::array<uint8_t, 10> ones;
    ones.fill(0xff);
    const uint64_t far = 4102444800000ull + 3653ull * 24 * 3600 * 1000;  // 2100 + 10 years
    EXPECT_LT(uuid_v7_at(far, ones), waiting_position());
    EXPECT_LT(uuid_v7_floor(far + 1), waiting_position());
    for (uint8_t b : waiting_position()) EXPECT_EQ(b, 0xff);
}

TEST(OutboxPolicy, AMessageWaitsOnlyBehindAnother) {
    // alone in the outbox: the first one cannot wait, the guesses behind it stand
    EXPECT_EQ(settled_waiting(false, {true, true, false}), (std::vector<bool>{false, true, false}));
    EXPECT_EQ(settled_waiting(false, {false, false}), (std::vector<bool>{false, false}));
    // behind other transactions' messages: every guess stands
    EXPECT_EQ(settled_waiting(true, {true, false}), (std::vector<bool>{true, false}));
    EXPECT_EQ(settled_waiting(true, {false}), (std::vector<bool>{false}));
    EXPECT_TRUE(settled_waiting(false, {}).empty());
}
