// What the daemons' database connections (the relay's source_db and locked_tx, the console's
// db.cpp) share about libpq's text.
#pragma once

#include <string>
#include <vector>

namespace once::relay {

// A whole libpq message on one line (for logs and exceptions).
std::string one_line(const char* s);

// A PostgreSQL array literal of items that need no quoting (uuids, validated topic patterns).
std::string array_literal(const std::vector<std::string>& items);

// SQLSTATEs that mean "reconnect": connection exceptions, shutdowns, and a read-only server
// after a failover (25006).
bool connection_lost_sqlstate(const char* code);

}  // namespace once::relay
