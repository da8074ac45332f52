#include "outbox/pq_connect.hpp"

#include <algorithm>

namespace once::relay {

PGconn* relay_connect(const std::string& conninfo, const std::string& application_name, Millis connect_timeout) {
    std::string seconds = std::to_string(std::max<int64_t>(1, connect_timeout.count() / 1000));
    // Defaults first: libpq lets later entries override earlier ones, and the expanded
    // dbname entry (the whole conninfo) comes last.
    const char* keys[] = {"connect_timeout",     "application_name", "keepalives", "keepalives_idle",
                          "keepalives_interval", "keepalives_count", "dbname",     nullptr};
    const char* vals[] = {seconds.c_str(), application_name.c_str(), "1", "10", "5", "3", conninfo.c_str(), nullptr};
    return PQconnectdbParams(keys, vals, 1);
}

}  // namespace once::relay
