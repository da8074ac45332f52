// The inbound relay's --db as the URI the PostgreSQL sink takes: a postgresql:// URI is used
// as it is; a keyword=value conninfo becomes postgresql://?keyword=value&... (libpq accepts
// every keyword as a URI parameter). Throws std::invalid_argument when libpq cannot parse it.
#pragma once

#include <string>

namespace once::relay {

std::string inbox_database_uri(const std::string& conninfo);

}  // namespace once::relay
