#include "db.hpp"

#include "pq_connect.hpp"
#include "pq_text.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <map>

namespace once::console {

namespace {

struct ConnDeleter {
    void operator()(PGconn* c) const { if (c) PQfinish(c); }
};
// The thread's connection to each database it served (by conninfo): a console serves one or
// several databases, each request thread keeps one connection to each.
thread_local std::map<std::string, std::unique_ptr<PGconn, ConnDeleter>> t_conns;

[[noreturn]] void throw_result(PGconn* conn, PGresult* r) {
    std::string state = r && PQresultErrorField(r, PG_DIAG_SQLSTATE) ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : "";
    std::string msg = relay::one_line(r ? PQresultErrorMessage(r) : PQerrorMessage(conn));
    if (r) PQclear(r);
    if (PQstatus(conn) != CONNECTION_OK)
        for (auto& [conninfo, c] : t_conns)
            if (c.get() == conn) c.reset();
    throw DbError(msg.empty() ? "database error" : msg, state);
}

}  // namespace

void reset_thread_connection() { t_conns.clear(); }

std::string Rows::operator()(int row, const char* col) const {
    int c = PQfnumber(r_.get(), col);
    if (c < 0) throw std::logic_error(std::string("no column ") + col);
    return PQgetvalue(r_.get(), row, c);
}

bool Rows::is_null(int row, const char* col) const {
    int c = PQfnumber(r_.get(), col);
    if (c < 0) throw std::logic_error(std::string("no column ") + col);
    return PQgetisnull(r_.get(), row, c);
}

std::optional<std::string> Rows::optional(int row, const char* col) const {
    if (is_null(row, col)) return std::nullopt;
    return (*this)(row, col);
}

Tx::Tx(const DbConfig& cfg, Role role, bool read_only) {
    auto& t_conn = t_conns[cfg.conninfo];
    if (t_conn && PQstatus(t_conn.get()) != CONNECTION_OK) t_conn.reset();
    if (!t_conn) {
        PGconn* c = relay::relay_connect(cfg.conninfo, "once-console", cfg.connect_timeout);
        if (PQstatus(c) != CONNECTION_OK) {
            std::string msg = relay::one_line(PQerrorMessage(c));
            PQfinish(c);
            throw DbError("cannot connect to the database: " + msg, "08000");
        }
        t_conn.reset(c);
    }
    conn_ = t_conn.get();
    std::string begin = std::string(read_only ? "BEGIN READ ONLY" : "BEGIN") + "; SET LOCAL ROLE " +
                        (role == Role::admin ? "once_console_admin" : "once_console_viewer") +
                        "; SET LOCAL statement_timeout = " + std::to_string(cfg.statement_timeout.count());
    auto t0 = std::chrono::steady_clock::now();
    PGresult* r = PQexec(conn_, begin.c_str());
    db_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        PQexec(conn_, "ROLLBACK");
        throw_result(conn_, r);
    }
    PQclear(r);
    open_ = true;
}

Tx::~Tx() {
    if (!open_) return;
    for (auto& [conninfo, c] : t_conns)
        if (c.get() == conn_ && PQstatus(conn_) == CONNECTION_OK) PQclear(PQexec(conn_, "ROLLBACK"));
}

Rows Tx::query(const std::string& sql, const std::vector<std::optional<std::string>>& params) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    auto t0 = std::chrono::steady_clock::now();
    PGresult* r = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                               nullptr, 0);
    db_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) throw_result(conn_, r);
    return Rows(r);
}

void Tx::commit() {
    PGresult* r = PQexec(conn_, "COMMIT");
    open_ = false;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) throw_result(conn_, r);
    PQclear(r);
}

}  // namespace once::console
