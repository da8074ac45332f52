#include "core/named_parameters.hpp"
#include "core/outbox_insert_sql.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using once::OutboxInsertColumn;
using once::outbox_insert_rows_sql;
using once::outbox_insert_values_sql;

namespace {

const std::vector<OutboxInsertColumn> kColumns = {
    {"id", ":id"},
    {"created_at", "COALESCE(:created_at, pg_catalog.now())"},
    {"key", ":key"},
    {"key_owner", "CASE WHEN :key IS NOT NULL THEN :key_owner END"},
    {"payload", ":payload::pg_catalog.jsonb"},
};

}  // namespace

TEST(OutboxInsertSql, OneRowListsEveryColumnWithItsValue) {
    EXPECT_EQ(outbox_insert_values_sql(kColumns),
              "INSERT INTO once.outbox (id, created_at, key, key_owner, payload) VALUES (:id, "
              "COALESCE(:created_at, pg_catalog.now()), :key, CASE WHEN :key IS NOT NULL THEN :key_owner END, "
              ":payload::pg_catalog.jsonb)");
}

TEST(OutboxInsertSql, ManyRowsReadTheirPerRowColumnsFromTheUnnestedArrays) {
    EXPECT_EQ(outbox_insert_rows_sql(kColumns, {"id", "key", "payload"}),
              "INSERT INTO once.outbox (id, created_at, key, key_owner, payload) SELECT u.id, "
              "COALESCE(:created_at, pg_catalog.now()), u.key, CASE WHEN u.key IS NOT NULL THEN :key_owner END, "
              "u.payload::pg_catalog.jsonb FROM ROWS FROM (pg_catalog.unnest(:id), pg_catalog.unnest(:key), "
              "pg_catalog.unnest(:payload)) AS u(id, key, payload)");
}

TEST(OutboxInsertSql, EveryColumnIsAParameterOnce) {
    // (numbered_parameters throws for a name that does not occur)
    std::vector<std::string> names = {"id", "created_at", "key", "key_owner", "payload"};
    EXPECT_NO_THROW(once::numbered_parameters(outbox_insert_values_sql(kColumns), names));
    EXPECT_NO_THROW(once::numbered_parameters(outbox_insert_rows_sql(kColumns, {"id", "key"}), names));
}

TEST(OutboxInsertSql, APerRowNameMustBeAColumn) {
    EXPECT_THROW(outbox_insert_rows_sql(kColumns, {"nope"}), std::invalid_argument);
}
