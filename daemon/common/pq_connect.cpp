#include "pq_connect.hpp"

#include "pq_notices.hpp"

#include <algorithm>

namespace once::relay {

namespace {

PGconn* connect_with(const std::string& conninfo, const std::string& application_name, Millis connect_timeout,
                     const char* replication) {
    std::string seconds = std::to_string(std::max<int64_t>(1, connect_timeout.count() / 1000));
    // Defaults first: libpq lets later entries override earlier ones, so the expanded dbname
    // entry (the whole conninfo) overrides them; only `replication` comes after it.
    const char* keys[] = {"connect_timeout",     "application_name", "keepalives", "keepalives_idle",
                          "keepalives_interval", "keepalives_count", "dbname",     "replication", nullptr};
    const char* vals[] = {seconds.c_str(), application_name.c_str(), "1", "10", "5", "3", conninfo.c_str(), replication, nullptr};
    PGconn* conn = PQconnectdbParams(keys, vals, 1);  // libpq skips an entry whose value is NULL
    // (a notice the server sends while the connection starts is printed by libpq's default,
    // on stderr: the receiver can only be set once the connection object exists)
    log_notices(conn, replication ? "replication connection" : "database connection");
    return conn;
}

}  // namespace

PGconn* relay_connect(const std::string& conninfo, const std::string& application_name, Millis connect_timeout) {
    return connect_with(conninfo, application_name, connect_timeout, nullptr);
}

PGconn* relay_connect_replication(const std::string& conninfo, const std::string& application_name,
                                  Millis connect_timeout) {
    return connect_with(conninfo, application_name, connect_timeout, "database");
}

}  // namespace once::relay
