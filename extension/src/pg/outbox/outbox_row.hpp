// One message row of once.outbox as every INSERT into it writes it: once.send and send_many
// (outbox_send.cpp), the WAL transport's deferred keyed message (outbox_wal_send.cpp), a
// lock-held message given back (outbox_settle.cpp) and a WAL write-back
// (outbox_wal_write_back.cpp). The column list below makes the row's fields, the statement's
// column and value lists and its parameters (core/outbox_insert_sql.hpp), so a new column of
// a message is one line here plus the callers that set it.
#pragma once

#include "pg/common/postgres_headers.hpp"
#include "pg/common/spi.hpp"

#include <optional>
#include <string>
#include <vector>

// COLUMN(name, type, array type, value): the value's SQL, in which :name is the bound field
// (NULL when the caller leaves it unset; a COALESCE gives the column's default then).
// key_owner is written only with a key. (relay stays NULL: an inserted message is leased to
// no relay. stream_fence follows from stream_fence_slot: outbox_row.cpp.)
#define ONCE_OUTBOX_ROW_COLUMNS(COLUMN)                                                                  \
    COLUMN(id, UUIDOID, UUIDARRAYOID, ":id")                                                             \
    COLUMN(created_at, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID, "COALESCE(:created_at, pg_catalog.now())")   \
    COLUMN(visible_at, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID, "COALESCE(:visible_at, pg_catalog.now())")   \
    COLUMN(attempt, INT4OID, INT4ARRAYOID, "COALESCE(:attempt, 0)")                                      \
    COLUMN(pos, UUIDOID, UUIDARRAYOID, ":pos")                                                           \
    COLUMN(dead_at, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID, ":dead_at")                                     \
    COLUMN(key_seq, UUIDOID, UUIDARRAYOID, ":key_seq")                                                   \
    COLUMN(topic, TEXTOID, TEXTARRAYOID, ":topic")                                                       \
    COLUMN(key, TEXTOID, TEXTARRAYOID, ":key")                                                           \
    COLUMN(payload, JSONBOID, JSONBARRAYOID, ":payload")                                                 \
    COLUMN(headers, JSONBOID, JSONBARRAYOID, ":headers")                                                 \
    COLUMN(last_error, TEXTOID, TEXTARRAYOID, ":last_error")                                             \
    COLUMN(key_owner, OIDOID, OIDARRAYOID, "CASE WHEN :key IS NOT NULL THEN :key_owner END")             \
    COLUMN(stream_fence_slot, NAMEOID, NAMEARRAYOID, ":stream_fence_slot")                               \
    COLUMN(content_type, TEXTOID, TEXTARRAYOID, ":content_type")

namespace once::pg {

// One field of a row: NULL until set.
struct OutboxValue {
    Datum value = 0;
    bool null = true;

    void set(Datum d) {
        value = d;
        null = false;
    }
    // Sets `d` when `present` (leaves NULL otherwise).
    void set_if(bool present, Datum d) {
        if (present) set(d);
    }
};

struct OutboxRow {
#define ONCE_OUTBOX_ROW_FIELD(name, type, array_type, sql) OutboxValue name;
    ONCE_OUTBOX_ROW_COLUMNS(ONCE_OUTBOX_ROW_FIELD)
#undef ONCE_OUTBOX_ROW_FIELD
};

// A prepared INSERT of one row: `prefix` (a WITH clause, say: :id and the other field names
// are its parameters too) + the insert + `suffix` (ON CONFLICT ...). Prepared on first use.
class OutboxInsert {
public:
    explicit OutboxInsert(const char* prefix = "", const char* suffix = "") : prefix_(prefix), suffix_(suffix) {}

    // Returns SPI_processed.
    uint64 execute(const OutboxRow& row);
    // Under the given snapshot (from the pre-commit step: SavedPlan::execute).
    uint64 execute(Snapshot snapshot, const OutboxRow& row);

private:
    SavedPlan& plan();

    const char* prefix_;
    const char* suffix_;
    std::string sql_;
    std::optional<SavedPlan> plan_;
};

// A prepared INSERT of many rows in one statement: the fields named in `per_row` are arrays
// (one element per row, of the column's array type), every other field one value that all
// rows share.
class OutboxInsertMany {
public:
    explicit OutboxInsertMany(std::vector<std::string> per_row) : per_row_(std::move(per_row)) {}

    uint64 execute(const OutboxRow& rows);

private:
    std::vector<std::string> per_row_;
    std::string sql_;
    std::optional<SavedPlan> plan_;
};

}  // namespace once::pg
