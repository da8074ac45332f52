#include "core/uuid_v7.hpp"

#include <gtest/gtest.h>

#include <set>

using once::Uuid;
using once::UuidV7Generator;

namespace {
std::array<uint8_t, 10> bytes(uint8_t fill) { std::array<uint8_t, 10> r; r.fill(fill); return r; }
}

TEST(UuidV7, HasVersionAndVariantBits) {
    UuidV7Generator gen;
    Uuid id = gen.next(1700000000000ULL, bytes(0xFF));
    EXPECT_EQ(id[6] >> 4, 7);
    EXPECT_EQ(id[8] >> 6, 2);
    EXPECT_EQ(once::uuid_v7_unix_ms(id), 1700000000000ULL);
}

TEST(UuidV7, StrictlyIncreasingWithinOneMillisecond) {
    UuidV7Generator gen;
    Uuid prev = gen.next(1000, bytes(0xFF));  // counter starts high: exercises the carry
    for (int i = 0; i < 10000; ++i) {
        Uuid next = gen.next(1000, bytes(static_cast<uint8_t>(i)));
        ASSERT_LT(prev, next) << "at " << i;  // byte-wise order == string order == uuid order
        prev = next;
    }
    EXPECT_GT(once::uuid_v7_unix_ms(prev), 1000u);  // counter overflow borrowed milliseconds
}

TEST(UuidV7, OrderedAcrossMillisecondsAndClockSteppingBack) {
    UuidV7Generator gen;
    Uuid a = gen.next(5000, bytes(1));
    Uuid b = gen.next(5001, bytes(0));
    Uuid c = gen.next(4000, bytes(9));  // clock went back: still increasing
    EXPECT_LT(a, b);
    EXPECT_LT(b, c);
    EXPECT_EQ(once::uuid_v7_unix_ms(c), 5001u);
}

TEST(UuidV7, StringForm) {
    Uuid id{};
    for (int i = 0; i < 16; ++i) id[i] = static_cast<uint8_t>(i * 17);
    EXPECT_EQ(once::uuid_to_string(id), "00112233-4455-6677-8899-aabbccddeeff");
}

TEST(UuidV7, DistinctRandomPartsGiveDistinctIds) {
    UuidV7Generator gen;
    std::set<Uuid> ids;
    for (int i = 0; i < 1000; ++i) ids.insert(gen.next(42 + i / 100, bytes(static_cast<uint8_t>(i))));
    EXPECT_EQ(ids.size(), 1000u);
}

TEST(UuidV8, VersionAndVariantBitsReplaceSixBitsOfTheHash) {
    uint8_t hash[16];
    for (int i = 0; i < 16; ++i) hash[i] = 0xff;
    once::Uuid id = once::uuid_v8_from_hash(hash);
    EXPECT_EQ(once::uuid_to_string(id), "ffffffff-ffff-8fff-bfff-ffffffffffff");
    for (int i = 0; i < 16; ++i) hash[i] = 0x00;
    EXPECT_EQ(once::uuid_to_string(once::uuid_v8_from_hash(hash)), "00000000-0000-8000-8000-000000000000");
}

TEST(UuidV8, RoleScopedInputSeparatesRoleAndId) {
    once::Uuid chosen{};
    chosen[15] = 7;
    std::string a = once::role_scoped_id_input("alice", chosen);
    std::string b = once::role_scoped_id_input("bob", chosen);
    EXPECT_NE(a, b);
    EXPECT_EQ(a.substr(0, 22), std::string("pg_once message_id v1\0", 22));
    EXPECT_EQ(a.size(), 22u + 5 + 1 + 16);
    EXPECT_EQ(a[22 + 5], '\0');
    EXPECT_EQ(static_cast<uint8_t>(a.back()), 7);
}
