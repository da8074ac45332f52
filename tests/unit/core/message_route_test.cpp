#include "core/message_route.hpp"

#include <gtest/gtest.h>

using namespace once;

namespace {

// A message that rides the WAL unless a test changes one fact.
RouteFacts wal_facts(bool has_key) {
    RouteFacts f;
    f.transport = Transport::wal;
    f.has_key = has_key;
    f.preloaded = true;
    return f;
}

RouteFacts at_commit(RouteFacts f, bool key_in_table, bool preparing) {
    f.at_commit = CommitFacts{key_in_table, preparing};
    return f;
}

}  // namespace

TEST(MessageRoute, TableTransportIsAlwaysARow) {
    for (bool key : {false, true})
        for (bool deliver_at : {false, true})
            for (bool explicit_id : {false, true})
                for (bool preloaded : {false, true}) {
                    RouteFacts f;
                    f.transport = Transport::table;
                    f.has_key = key;
                    f.has_deliver_at = deliver_at;
                    f.explicit_id = explicit_id;
                    f.preloaded = preloaded;
                    EXPECT_EQ(route_message(f), Route::table_row);
                }
}

TEST(MessageRoute, UnkeyedRidesTheWalNow) {
    EXPECT_EQ(route_message(wal_facts(false)), Route::wal_now);
    RouteFacts explicit_id = wal_facts(false);
    explicit_id.explicit_id = true;
    EXPECT_EQ(route_message(explicit_id), Route::wal_now);
    RouteFacts not_preloaded = wal_facts(false);
    not_preloaded.preloaded = false;
    EXPECT_EQ(route_message(not_preloaded), Route::wal_now);
}

TEST(MessageRoute, DeliverAtIsARowKeyedOrNot) {
    for (bool key : {false, true}) {
        RouteFacts f = wal_facts(key);
        f.has_deliver_at = true;
        EXPECT_EQ(route_message(f), Route::table_row);
    }
}

TEST(MessageRoute, KeyedWithExplicitIdIsARow) {
    RouteFacts f = wal_facts(true);
    f.explicit_id = true;
    EXPECT_EQ(route_message(f), Route::table_row);
    EXPECT_EQ(route_message(at_commit(f, false, false)), Route::table_row);
}

TEST(MessageRoute, KeyedWithoutPreloadIsARow) {
    RouteFacts f = wal_facts(true);
    f.preloaded = false;
    EXPECT_EQ(route_message(f), Route::table_row);
}

TEST(MessageRoute, KeyedWaitsForCommitToChooseItsHome) {
    EXPECT_EQ(route_message(wal_facts(true)), Route::wal_at_commit);
}

TEST(MessageRoute, AtCommitAKeyedMessageJoinsItsKeysHome) {
    const RouteFacts f = wal_facts(true);
    EXPECT_EQ(route_message(at_commit(f, false, false)), Route::wal_now);
    EXPECT_EQ(route_message(at_commit(f, true, false)), Route::table_row);   // the key has rows
    EXPECT_EQ(route_message(at_commit(f, false, true)), Route::table_row);   // being prepared
    EXPECT_EQ(route_message(at_commit(f, true, true)), Route::table_row);
}

TEST(MessageRoute, BatchWithoutATableMessageKeepsEachRoute) {
    EXPECT_TRUE(route_batch({}).empty());
    EXPECT_EQ(route_batch({wal_facts(false), wal_facts(true), wal_facts(false)}),
              (std::vector<Route>{Route::wal_now, Route::wal_at_commit, Route::wal_now}));
}

TEST(MessageRoute, BatchWithATableMessageIsAllRows) {
    RouteFacts keyed_not_preloaded = wal_facts(true);
    keyed_not_preloaded.preloaded = false;
    RouteFacts unkeyed_not_preloaded = wal_facts(false);
    unkeyed_not_preloaded.preloaded = false;
    EXPECT_EQ(route_batch({unkeyed_not_preloaded, keyed_not_preloaded}),
              (std::vector<Route>{Route::table_row, Route::table_row}));
    RouteFacts table = wal_facts(false);
    table.transport = Transport::table;
    EXPECT_EQ(route_batch({table, table}), (std::vector<Route>{Route::table_row, Route::table_row}));
}
