// The PostgreSQL error code of a pg_once error; the codes themselves: core/sqlstates.def.
#pragma once

#include "core/error.hpp"

namespace once::pg {

int sqlstate_for(ErrorCode code);

}  // namespace once::pg
