// One message row of once.outbox for every INSERT; why: outbox_row.hpp.
#include "pg/outbox/outbox_row.hpp"

#include "core/error.hpp"
#include "core/named_parameters.hpp"
#include "core/outbox_insert_sql.hpp"

#include <algorithm>
#include <stdexcept>

namespace once::pg {
namespace {

struct ColumnDef {
    const char* name;
    Oid type;
    Oid array_type;
    const char* value;
};

constexpr ColumnDef kColumns[] = {
#define ONCE_OUTBOX_ROW_DEF(name, type, array_type, sql) {#name, type, array_type, sql},
    ONCE_OUTBOX_ROW_COLUMNS(ONCE_OUTBOX_ROW_DEF)
#undef ONCE_OUTBOX_ROW_DEF
};
constexpr size_t kColumnCount = sizeof(kColumns) / sizeof(kColumns[0]);

// The insert's columns: the bound ones, then the fence, which is the WAL insert position when
// the row is fenced for a slot (a keyed write-back, outbox_wal_write_back.cpp), taken as the row
// is inserted, after the key's lock.
std::vector<OutboxInsertColumn> insert_columns() {
    std::vector<OutboxInsertColumn> out;
    for (const ColumnDef& c : kColumns) out.push_back({c.name, c.value});
    out.push_back({"stream_fence",
                   "CASE WHEN :stream_fence_slot IS NOT NULL THEN pg_catalog.pg_current_wal_insert_lsn() END"});
    return out;
}

std::vector<std::string> parameter_names() {
    std::vector<std::string> out;
    for (const ColumnDef& c : kColumns) out.emplace_back(c.name);
    return out;
}

// The row's values and nulls in kColumns' order.
void bind(const OutboxRow& row, Datum* values, char* nulls) {
    size_t i = 0;
#define ONCE_OUTBOX_ROW_BIND(name, type, array_type, sql) \
    values[i] = row.name.value;                            \
    nulls[i] = row.name.null ? 'n' : ' ';                  \
    ++i;
    ONCE_OUTBOX_ROW_COLUMNS(ONCE_OUTBOX_ROW_BIND)
#undef ONCE_OUTBOX_ROW_BIND
}

std::string numbered(const std::string& sql) {
    try {
        return numbered_parameters(sql, parameter_names());
    } catch (const std::invalid_argument& e) {
        throw Error(ErrorCode::internal, std::string("malformed outbox insert: ") + e.what());
    }
}

}  // namespace

SavedPlan& OutboxInsert::plan() {
    if (!plan_) {
        sql_ = numbered(std::string(prefix_) + outbox_insert_values_sql(insert_columns()) + suffix_);
        std::vector<Oid> types;
        for (const ColumnDef& c : kColumns) types.push_back(c.type);
        plan_.emplace(sql_.c_str(), std::move(types));
    }
    return *plan_;
}

uint64 OutboxInsert::execute(const OutboxRow& row) {
    Datum values[kColumnCount];
    char nulls[kColumnCount + 1] = {};
    bind(row, values, nulls);
    return plan().execute(values, nulls);
}

uint64 OutboxInsert::execute(Snapshot snapshot, const OutboxRow& row) {
    Datum values[kColumnCount];
    char nulls[kColumnCount + 1] = {};
    bind(row, values, nulls);
    return plan().execute(snapshot, false, values, nulls);
}

uint64 OutboxInsertMany::execute(const OutboxRow& rows) {
    if (!plan_) {
        try {
            sql_ = numbered(outbox_insert_rows_sql(insert_columns(), per_row_));
        } catch (const std::invalid_argument& e) {
            throw Error(ErrorCode::internal, std::string("malformed outbox insert: ") + e.what());
        }
        std::vector<Oid> types;
        for (const ColumnDef& c : kColumns) {
            const bool array = std::find(per_row_.begin(), per_row_.end(), c.name) != per_row_.end();
            types.push_back(array ? c.array_type : c.type);
        }
        plan_.emplace(sql_.c_str(), std::move(types));
    }
    Datum values[kColumnCount];
    char nulls[kColumnCount + 1] = {};
    bind(rows, values, nulls);
    return plan_->execute(values, nulls);
}

}  // namespace once::pg
