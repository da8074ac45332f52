// The SQL of an INSERT into once.outbox, made from one column list (pg/outbox/outbox_row.hpp),
// so that every statement that writes a message writes the same columns the same way, and a
// new column is one line of that list. Pure text: the caller numbers the :names
// (core/named_parameters.hpp) and binds the values.
#pragma once

#include <string>
#include <vector>

namespace once {

// A column as an INSERT writes it: its name and the SQL of its value, in which :name stands
// for a bound value, the column's own or another's (key_owner, say, is written only with a key).
struct OutboxInsertColumn {
    std::string name;
    std::string value;
};

// "INSERT INTO once.outbox (<names>) VALUES (<values>)".
std::string outbox_insert_values_sql(const std::vector<OutboxInsertColumn>& columns);

// Many rows in one statement: "INSERT INTO once.outbox (<names>) SELECT <values> FROM ROWS FROM
// (pg_catalog.unnest(:a), ...) AS u(a, ...)". :name of a column in `per_row` is bound to an
// array and reads as u.name (its element for the row) in the values; every other :name is one
// value that every row shares. Throws std::invalid_argument for a per_row name that is no column.
std::string outbox_insert_rows_sql(const std::vector<OutboxInsertColumn>& columns, const std::vector<std::string>& per_row);

}  // namespace once
