// SPI helpers: a connection per call, statements prepared once per backend, and running
// internal statements as the extension's owner.
#pragma once

#include "pg/common/guard.hpp"

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace once::pg {

// One SPI connection for the duration of an SQL-callable function. On normal exit it is
// closed; when an exception unwinds it, transaction (or subtransaction) abort closes it.
class SpiSession {
public:
    SpiSession();
    ~SpiSession();
    SpiSession(const SpiSession&) = delete;
    SpiSession& operator=(const SpiSession&) = delete;

    // The memory context that was current before SPI_connect: results returned to the caller
    // must be copied there, because SPI_finish frees SPI's own contexts.
    MemoryContext caller_context() const { return caller_context_; }

    // Copies a by-reference datum into the caller's context.
    Datum copy_out(Datum value, bool typbyval, int typlen) const;

private:
    MemoryContext caller_context_;
    int uncaught_at_start_;
};

// An internal SQL statement, prepared on first use and kept for the life of the backend
// (SPI_prepare + SPI_keepplan; PostgreSQL's plan cache revalidates it after DDL).
// Internal SQL must be fully schema-qualified, operators included (OPERATOR(pg_catalog.=)),
// because it runs as the extension owner under the caller's search_path.
class SavedPlan {
public:
    SavedPlan(const char* sql, std::initializer_list<Oid> argument_types)
        : sql_(sql), argument_types_(argument_types) {}
    SavedPlan(const char* sql, std::vector<Oid> argument_types)
        : sql_(sql), argument_types_(std::move(argument_types)) {}

    // Executes the statement; returns SPI_processed. Results are in SPI_tuptable.
    uint64 execute(const Datum* values, const char* nulls, long max_rows = 0);

    // Executes the statement under the given snapshot instead of a fresh one (also where no
    // outer snapshot exists, e.g. in a pre-commit callback). Triggers are not fired.
    uint64 execute(Snapshot snapshot, bool read_only, const Datum* values, const char* nulls, long max_rows = 0);

    // Executes a statement that yields exactly one row with a non-NULL int4 first column
    // (e.g. UPDATE ... RETURNING attempt) and returns that value; anything else is an
    // internal error whose message is "could not " + what.
    int32 execute_returning_int32(const Datum* values, const char* nulls, const char* what);

private:
    SPIPlanPtr prepared();

    const char* sql_;
    std::vector<Oid> argument_types_;
    SPIPlanPtr plan_ = nullptr;
};

// A SavedPlan whose parameters are named (:name in the SQL, core/named_parameters.hpp) and
// bound by name: for statements with many parameters, where binding by position invites two
// of the same type to be swapped unnoticed.
class NamedPlan {
public:
    struct Parameter {
        const char* name;
        Oid type;
    };
    struct Argument {
        const char* name;
        Datum value;
        bool null = false;
    };
    NamedPlan(const char* sql, std::initializer_list<Parameter> parameters);

    // Binds every parameter exactly once, in any order; a missing, unknown or repeated name is
    // an internal error. Returns SPI_processed.
    uint64 execute(std::initializer_list<Argument> arguments);

private:
    const char* named_sql_;
    std::vector<std::string> names_;
    std::vector<Oid> types_;
    std::string sql_;                  // numbered, on first use (an error then is an ERROR, not
    std::optional<SavedPlan> plan_;    // an exception while the module loads)
};

// Runs internal statements as the owner of schema "once" (the role that created the
// extension), the way PostgreSQL's RI triggers run as the table owner. Callers get access to
// pg_once's tables only through its functions, and user SQL never runs under this identity,
// so it needs none of restricted_call.hpp's isolation; inside a restricted call (a handler
// that sends, say) it keeps the restriction: the security context is extended, not replaced.
class AsExtensionOwner {
public:
    AsExtensionOwner();
    ~AsExtensionOwner();
    AsExtensionOwner(const AsExtensionOwner&) = delete;
    AsExtensionOwner& operator=(const AsExtensionOwner&) = delete;

private:
    Oid saved_user_;
    int saved_security_context_;
};

// Reads column `column` (1-based) of result row `row`; returns false when it is NULL.
bool spi_value(uint64 row, int column, Datum* value);

}  // namespace once::pg
