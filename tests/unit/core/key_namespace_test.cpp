#include "core/key_namespace.hpp"

#include <gtest/gtest.h>

using once::choose_key;
using once::KeyChoice;
using once::kNoKeyOwner;
using once::StoredKey;

namespace {
constexpr uint32_t kAlice = 10, kBob = 11, kGroup = 12, kGroup2 = 13;
// Alice inherits from both groups; nobody else.
bool alice_privileges(uint32_t owner) { return owner == kGroup || owner == kGroup2; }
}  // namespace

TEST(KeyNamespace, NoRowsMeansNone) {
    EXPECT_EQ(choose_key({}, kAlice, alice_privileges).kind, KeyChoice::none);
}

TEST(KeyNamespace, AnotherRolesKeyIsInvisible) {
    // Bob stored the key first: Alice does not see it and stores her own (no squatting).
    EXPECT_EQ(choose_key({{kBob, false}}, kAlice, alice_privileges).kind, KeyChoice::none);
}

TEST(KeyNamespace, OwnRowWinsOverEveryOther) {
    KeyChoice c = choose_key({{kNoKeyOwner, false}, {kGroup, false}, {kAlice, false}}, kAlice, alice_privileges);
    EXPECT_EQ(c.kind, KeyChoice::chosen);
    EXPECT_EQ(c.index, 2u);
}

TEST(KeyNamespace, ExpiredRowsAreAbsent) {
    EXPECT_EQ(choose_key({{kAlice, true}, {kGroup, true}, {kNoKeyOwner, true}}, kAlice, alice_privileges).kind,
              KeyChoice::none);
    KeyChoice c = choose_key({{kAlice, true}, {kGroup, false}}, kAlice, alice_privileges);
    EXPECT_EQ(c.kind, KeyChoice::chosen);
    EXPECT_EQ(c.index, 1u);
}

TEST(KeyNamespace, InheritedRowIsUsedBeforeAnOwnerlessOne) {
    KeyChoice c = choose_key({{kNoKeyOwner, false}, {kGroup, false}}, kAlice, alice_privileges);
    EXPECT_EQ(c.kind, KeyChoice::chosen);
    EXPECT_EQ(c.index, 1u);
}

TEST(KeyNamespace, OwnerlessRowIsSharedInItsWindow) {
    KeyChoice c = choose_key({{kBob, false}, {kNoKeyOwner, false}}, kAlice, alice_privileges);
    EXPECT_EQ(c.kind, KeyChoice::chosen);
    EXPECT_EQ(c.index, 1u);
}

TEST(KeyNamespace, TwoInheritedRowsAreAmbiguous) {
    EXPECT_EQ(choose_key({{kGroup, false}, {kGroup2, false}}, kAlice, alice_privileges).kind, KeyChoice::ambiguous);
    // ... unless the caller has a row of its own.
    EXPECT_EQ(choose_key({{kGroup, false}, {kGroup2, false}, {kAlice, false}}, kAlice, alice_privileges).kind,
              KeyChoice::chosen);
}
