// The SQL of an INSERT into once.outbox; why: outbox_insert_sql.hpp.
#include "core/outbox_insert_sql.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace once {
namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string names_of(const std::vector<OutboxInsertColumn>& columns) {
    std::string out;
    for (const OutboxInsertColumn& c : columns) out += (out.empty() ? "" : ", ") + c.name;
    return out;
}

// `sql` with every :name (not a "::" cast, not a longer name) replaced by `by`.
std::string replace_parameter(const std::string& sql, const std::string& name, const std::string& by) {
    std::string out;
    for (size_t i = 0; i < sql.size();) {
        const bool colon = sql[i] == ':' && !(i > 0 && sql[i - 1] == ':') && !(i + 1 < sql.size() && sql[i + 1] == ':');
        const size_t end = i + 1 + name.size();
        if (colon && sql.compare(i + 1, name.size(), name) == 0 && (end >= sql.size() || !word_char(sql[end]))) {
            out += by;
            i = end;
        } else {
            out += sql[i++];
        }
    }
    return out;
}

}  // namespace

std::string outbox_insert_values_sql(const std::vector<OutboxInsertColumn>& columns) {
    std::string values;
    for (const OutboxInsertColumn& c : columns) values += (values.empty() ? "" : ", ") + c.value;
    return "INSERT INTO once.outbox (" + names_of(columns) + ") VALUES (" + values + ")";
}

std::string outbox_insert_rows_sql(const std::vector<OutboxInsertColumn>& columns, const std::vector<std::string>& per_row) {
    std::string unnests, aliases;
    for (const std::string& name : per_row) {
        if (std::none_of(columns.begin(), columns.end(), [&](const OutboxInsertColumn& c) { return c.name == name; }))
            throw std::invalid_argument("per-row column " + name + " is not a column of the insert");
        unnests += (unnests.empty() ? "" : ", ") + ("pg_catalog.unnest(:" + name + ")");
        aliases += (aliases.empty() ? "" : ", ") + name;
    }
    std::string values;
    for (const OutboxInsertColumn& c : columns) {
        std::string value = c.value;
        for (const std::string& name : per_row) value = replace_parameter(value, name, "u." + name);
        values += (values.empty() ? "" : ", ") + value;
    }
    return "INSERT INTO once.outbox (" + names_of(columns) + ") SELECT " + values + " FROM ROWS FROM (" + unnests +
           ") AS u(" + aliases + ")";
}

}  // namespace once
