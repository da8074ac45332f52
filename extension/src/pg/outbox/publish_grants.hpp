// Who may publish on which topics. An admin grants a role publishing on
// topic patterns with once.grant_publish (NATS-style patterns, as subscriptions use). While no
// grant exists at all, every producer may publish on every topic, as in 0.2; once one does,
// once.send and once.send_many need a grant that matches the topic, held by the caller or a
// role whose privileges it has, and refuse others with ON215. The grants are cached per
// backend (table_cache.hpp), so a send pays one flag check when nothing changed.
#pragma once

#include "pg/common/postgres_headers.hpp"

#include <string_view>

namespace once::pg {

// Throws ON215 unless the current user may publish on topic. SPI must be connected.
void check_may_publish(std::string_view topic);

}  // namespace once::pg
