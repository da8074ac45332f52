// Who may start which saga definition. An admin grants a role
// the start of a definition with once.grant_saga_start(role, name). A definition without any
// grant may be started by every producer, as in 0.2; once it has one, once.saga_start needs a
// grant of the caller or of a role whose privileges it has, and refuses others with ON407.
// Saga ids are unique per definition, so a role that may not start a definition cannot take
// the ids of its sagas.
#pragma once

#include "pg/common/postgres_headers.hpp"

namespace once::pg {

// Throws ON407 unless role may start the saga definition name. SPI must be connected; reads
// as the extension owner.
void check_may_start_saga(Oid role, text* name);

}  // namespace once::pg
