#include "operator_actions.hpp"

#include <gtest/gtest.h>

using namespace once::console;

TEST(OperatorActions, UuidArrayLiteral) {
    EXPECT_EQ(uuid_array_literal({}), "{}");
    EXPECT_EQ(uuid_array_literal({"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}), "{0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b}");
    EXPECT_EQ(uuid_array_literal({"a", "b", "c"}), "{a,b,c}");
}
