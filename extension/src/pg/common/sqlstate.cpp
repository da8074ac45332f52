#include "pg/common/sqlstate.hpp"

#include "pg/common/postgres_headers.hpp"

namespace once::pg {

int sqlstate_for(ErrorCode code) {
    const char* s = sqlstate_of(code);
    return MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4]);
}

}  // namespace once::pg
