// SQLSTATEs of pg_once's own errors. Class "ON" is pg_once's; the README lists every code with
// the HTTP status a web API should answer with. Codes are part of the public contract: never
// reuse or renumber one.
#pragma once

#include "../core/error.hpp"

namespace once::pg {

int sqlstate_for(ErrorCode code);

}  // namespace once::pg
