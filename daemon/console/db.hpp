// The console's database access: one libpq connection per request thread and database (made
// on first use, remade after a failure). Every request runs in one transaction under SET LOCAL ROLE
// once_console_viewer or once_console_admin, by the console user's role, with a statement
// timeout; reads are READ ONLY transactions.
#pragma once

#include "auth.hpp"
#include "duration.hpp"

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace once::console {

// A database error, with the SQLSTATE and the server's message (shown to the user: the
// console's roles only see what they may see anyway).
struct DbError : std::runtime_error {
    DbError(const std::string& m, std::string state) : std::runtime_error(m), sqlstate(std::move(state)) {}
    std::string sqlstate;
};

class Rows {
public:
    explicit Rows(PGresult* r) : r_(r, PQclear) {}
    int size() const { return PQntuples(r_.get()); }
    bool null(int row, int col) const { return PQgetisnull(r_.get(), row, col); }
    std::string get(int row, int col) const { return PQgetvalue(r_.get(), row, col); }
    std::string operator()(int row, const char* col) const;   // by column name
    bool is_null(int row, const char* col) const;
    std::optional<std::string> optional(int row, const char* col) const;   // NULL: std::nullopt

private:
    std::shared_ptr<PGresult> r_;
};

// A form field as a statement parameter: empty is NULL (no filter, no cursor).
inline std::optional<std::string> null_if_empty(const std::string& s) {
    if (s.empty()) return std::nullopt;
    return s;
}

struct DbConfig {
    std::string conninfo;
    relay::Millis connect_timeout{5000};
    relay::Millis statement_timeout{5000};
};

class Tx {
public:
    // Opens the thread's connection if needed and begins a transaction as `role`.
    Tx(const DbConfig& cfg, Role role, bool read_only);
    ~Tx();
    Tx(const Tx&) = delete;
    Tx& operator=(const Tx&) = delete;
    // $1.. parameters as text; std::nullopt is NULL.
    Rows query(const std::string& sql, const std::vector<std::optional<std::string>>& params = {});
    void commit();
    double db_ms() const { return db_ms_; }   // time spent waiting for the database

private:
    PGconn* conn_;
    bool open_ = false;
    double db_ms_ = 0;
};

// Drops the calling thread's connections (after a connection failure).
void reset_thread_connection();

}  // namespace once::console
