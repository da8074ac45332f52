#include "wal/pg_wal_store.hpp"

#include "outbox/pq_connect.hpp"
#include "outbox/pq_text.hpp"
#include "wal/message_tag.hpp"

#include <memory>
#include <stdexcept>

namespace once::relay {

namespace {
using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;
}

PgWalStore::PgWalStore(std::string conninfo, std::string name, Millis connect_timeout)
    : conninfo_(std::move(conninfo)), name_(std::move(name)), connect_timeout_(connect_timeout) {}

PgWalStore::~PgWalStore() {
    if (conn_) PQfinish(conn_);
}

void PgWalStore::fail(const std::string& what) {
    std::string message = what + ": " + one_line(conn_ ? PQerrorMessage(conn_) : "out of memory");
    if (conn_ && PQstatus(conn_) != CONNECTION_OK) {
        PQfinish(conn_);
        conn_ = nullptr;
    }
    throw std::runtime_error(message);
}

PGconn* PgWalStore::connection() {
    if (conn_ && PQstatus(conn_) == CONNECTION_OK) return conn_;
    if (conn_) PQfinish(conn_);
    conn_ = relay_connect(conninfo_, name_ + " wal write-back", connect_timeout_);
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) fail("database connection failed");
    Result r(PQexec(conn_, "SET search_path = pg_catalog, pg_temp"), PQclear);
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) fail("SET search_path failed");
    return conn_;
}

std::optional<std::string> PgWalStore::message_key() {
    PGconn* c = connection();
    Result probe(PQexec(c, "SELECT to_regprocedure('once.wal_secret()') IS NOT NULL"), PQclear);
    if (PQresultStatus(probe.get()) != PGRES_TUPLES_OK) fail("looking for once.wal_secret() failed");
    if (std::string(PQgetvalue(probe.get(), 0, 0)) != "t") return std::nullopt;
    // Binary result: the key's bytes as they are (never logged).
    Result r(PQexecParams(c, "SELECT once.wal_secret()", 0, nullptr, nullptr, nullptr, nullptr, 1), PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) fail("SELECT once.wal_secret() failed");
    if (PQntuples(r.get()) != 1 || PQgetisnull(r.get(), 0, 0)) throw std::runtime_error("once.wal_secret() returned no key");
    std::string key(PQgetvalue(r.get(), 0, 0), static_cast<size_t>(PQgetlength(r.get(), 0, 0)));
    if (key.size() != wal::kWalKeySize)
        throw std::runtime_error("once.wal_secret() returned " + std::to_string(key.size()) + " bytes, not " +
                                 std::to_string(wal::kWalKeySize));
    return key;
}

void PgWalStore::write_back(const WalWriteBack& w) {
    PGconn* c = connection();
    const Message& m = *w.message;
    std::string attempts = std::to_string(w.attempts);
    const char* values[9] = {m.id.c_str(),
                             m.topic.c_str(),
                             m.has_key ? m.key.c_str() : nullptr,
                             m.payload.c_str(),
                             m.headers.empty() ? nullptr : m.headers.c_str(),
                             m.created_at.c_str(),
                             attempts.c_str(),
                             w.error.c_str(),
                             w.dead ? "true" : "false"};
    Result r(PQexecParams(c,
                          "SELECT once.wal_write_back($1::uuid, $2::text, $3::text, $4::jsonb, $5::jsonb, "
                          "$6::timestamptz, $7::integer, $8::text, $9::boolean)",
                          9, nullptr, values, nullptr, nullptr, 0),
             PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) fail("once.wal_write_back failed");
}

}  // namespace once::relay
