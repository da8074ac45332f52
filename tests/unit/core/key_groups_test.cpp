#include "core/key_groups.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace once;

namespace {

struct Msg {
    uint32_t hash;
    std::string key;
    uint32_t owner;
    int sent;   // send order
};

KeyOrderId id_of(const Msg& m) { return KeyOrderId{m.hash, m.key, m.owner}; }

std::vector<int> send_order(const std::vector<Msg>& items) {
    std::vector<int> out;
    for (const Msg& m : items) out.push_back(m.sent);
    return out;
}

}  // namespace

TEST(KeyGroups, EmptyHasNoGroups) {
    std::vector<Msg> none;
    EXPECT_TRUE(group_by_key(none, id_of).empty());
}

TEST(KeyGroups, GroupsByHashThenKeyThenOwnerKeepingSendOrder) {
    std::vector<Msg> items = {
        {7, "b", 10, 0}, {3, "a", 10, 1}, {7, "b", 10, 2}, {3, "a", 20, 3}, {3, "a", 10, 4}, {7, "a", 10, 5},
    };
    std::vector<KeyGroup> groups = group_by_key(items, id_of);
    // (3,a,10): 1 4 | (3,a,20): 3 | (7,a,10): 5 | (7,b,10): 0 2
    EXPECT_EQ(send_order(items), (std::vector<int>{1, 4, 3, 5, 0, 2}));
    EXPECT_EQ(groups, (std::vector<KeyGroup>{{0, 2}, {2, 3}, {3, 4}, {4, 6}}));
}

TEST(KeyGroups, AnotherOwnersMessagesOfAKeyAreAnotherGroup) {
    std::vector<Msg> items = {{1, "k", 20, 0}, {1, "k", 10, 1}, {1, "k", 20, 2}};
    std::vector<KeyGroup> groups = group_by_key(items, id_of);
    EXPECT_EQ(send_order(items), (std::vector<int>{1, 0, 2}));
    EXPECT_EQ(groups, (std::vector<KeyGroup>{{0, 1}, {1, 3}}));
}

TEST(KeyGroups, KeysSharingAHashAreSeparateGroups) {
    std::vector<Msg> items = {{5, "y", 1, 0}, {5, "x", 1, 1}, {5, "y", 1, 2}};
    std::vector<KeyGroup> groups = group_by_key(items, id_of);
    EXPECT_EQ(send_order(items), (std::vector<int>{1, 0, 2}));
    EXPECT_EQ(groups, (std::vector<KeyGroup>{{0, 1}, {1, 3}}));
}

TEST(KeyGroups, ItemsAppendedAfterGroupingGoAfterTheEarlierOnesOfTheirGroup) {
    std::vector<Msg> items = {{2, "k", 1, 0}, {1, "j", 1, 1}, {2, "k", 1, 2}};
    group_by_key(items, id_of);
    items.push_back({2, "k", 1, 3});
    items.push_back({1, "j", 1, 4});
    std::vector<KeyGroup> groups = group_by_key(items, id_of);
    EXPECT_EQ(send_order(items), (std::vector<int>{1, 4, 0, 2, 3}));
    EXPECT_EQ(groups, (std::vector<KeyGroup>{{0, 2}, {2, 5}}));
}

TEST(KeyGroups, HasKeyMatchesKeyAndOwner) {
    std::vector<Msg> items = {{1, "k", 10, 0}, {2, "j", 20, 1}};
    EXPECT_TRUE(has_key(items, id_of, "k", 10));
    EXPECT_TRUE(has_key(items, id_of, "j", 20));
    EXPECT_FALSE(has_key(items, id_of, "k", 20));   // another role's order of the key
    EXPECT_FALSE(has_key(items, id_of, "x", 10));
    EXPECT_FALSE(has_key(std::vector<Msg>{}, id_of, "k", 10));
}

TEST(KeyGroups, LockOrderIsAscendingAndDistinct) {
    EXPECT_EQ(lock_order({}), std::vector<uint32_t>{});
    EXPECT_EQ(lock_order({200, 3, 200, 17, 3, 0}), (std::vector<uint32_t>{0, 3, 17, 200}));
}
