#include "outbox/session_check.hpp"

#include "pq_connect.hpp"
#include "pq_text.hpp"

#include <libpq-fe.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace once::relay {

std::optional<std::string> shared_session_evidence(const SessionProbe& probe) {
    for (int other : probe.other)
        for (int own : probe.own)
            if (other == own)
                return "another connection's transaction ran on this connection's server session (backend pid " +
                       std::to_string(own) + ")";
    for (size_t i = 1; i < probe.own.size(); ++i)
        if (probe.own[i] != probe.own[0])
            return "this connection's transactions ran on different server sessions (backend pids " +
                   std::to_string(probe.own[0]) + " and " + std::to_string(probe.own[i]) + ")";
    return std::nullopt;
}

bool prepare_clash_sqlstate(const char* code) { return code && std::strcmp(code, "42P05") == 0; }

bool prepared_statement_missing_sqlstate(const char* code) { return code && std::strcmp(code, "26000") == 0; }

std::string session_required_message(const std::string& redacted_conninfo, const std::string& evidence) {
    return "the database connection (" + redacted_conninfo + ") is pooled per transaction: " + evidence +
           ". once-relay needs a session of its own (LISTEN, prepared statements, a session lock): connect it "
           "directly or through a session pool (PgBouncer pool_mode = session); see docs/poolers.md";
}

namespace {

using PgResult = std::unique_ptr<PGresult, void (*)(PGresult*)>;
using PgConn = std::unique_ptr<PGconn, void (*)(PGconn*)>;

// One statement whose last result is the backend pid (SELECT pg_backend_pid(), possibly after
// a BEGIN in the same string).
int backend_pid(PGconn* c, const char* sql) {
    PgResult r(PQexec(c, sql), PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQntuples(r.get()) != 1)
        throw std::runtime_error(std::string("probing the server session: ") + one_line(PQerrorMessage(c)));
    return std::atoi(PQgetvalue(r.get(), 0, 0));
}

void exec_ok(PGconn* c, const char* sql) {
    PgResult r(PQexec(c, sql), PQclear);
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK)
        throw std::runtime_error(std::string("probing the server session: ") + one_line(PQerrorMessage(c)));
}

}  // namespace

void check_own_session(PGconn* conn, const std::string& conninfo, const std::string& redacted_conninfo,
                       const std::string& application_name, Millis connect_timeout) {
    SessionProbe probe;
    probe.own.push_back(backend_pid(conn, "SELECT pg_catalog.pg_backend_pid()"));
    PgConn other(relay_connect(conninfo, application_name, connect_timeout), PQfinish);
    if (PQstatus(other.get()) != CONNECTION_OK)
        throw std::runtime_error("probing the server session: cannot open a second connection: " +
                                 one_line(PQerrorMessage(other.get())));
    for (int round = 0; round < 2; ++round) {
        probe.other.push_back(backend_pid(other.get(), "BEGIN; SELECT pg_catalog.pg_backend_pid()"));
        probe.own.push_back(backend_pid(conn, "SELECT pg_catalog.pg_backend_pid()"));
        exec_ok(other.get(), "COMMIT");
    }
    other.reset();
    if (std::optional<std::string> evidence = shared_session_evidence(probe))
        throw SessionRequired(session_required_message(redacted_conninfo, *evidence));
}

}  // namespace once::relay
