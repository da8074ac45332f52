#include "core/named_parameters.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using once::numbered_parameters;

TEST(NamedParameters, NumbersEachNameByItsPlaceInTheList) {
    EXPECT_EQ(numbered_parameters("INSERT INTO t (a, b) VALUES (:b_val, :a_val)", {"a_val", "b_val"}),
              "INSERT INTO t (a, b) VALUES ($2, $1)");
}

TEST(NamedParameters, ANameMayOccurMoreThanOnce) {
    EXPECT_EQ(numbered_parameters("SELECT :x + :x, :y", {"x", "y"}), "SELECT $1 + $1, $2");
}

TEST(NamedParameters, LeavesCastsAndUnknownWordsAlone) {
    EXPECT_EQ(numbered_parameters("SELECT :id::pg_catalog.uuid, 'a:b', x::text, :other", {"id"}),
              "SELECT $1::pg_catalog.uuid, 'a:b', x::text, :other");
}

TEST(NamedParameters, ALongerNameIsNotTakenForAShorterOne) {
    EXPECT_EQ(numbered_parameters("SELECT :key_seq, :key", {"key", "key_seq"}), "SELECT $2, $1");
}

TEST(NamedParameters, RefusesANameTheStatementLacksOrOneListedTwice) {
    EXPECT_THROW(numbered_parameters("SELECT :a", {"a", "b"}), std::invalid_argument);
    EXPECT_THROW(numbered_parameters("SELECT :a", {"a", "a"}), std::invalid_argument);
}
