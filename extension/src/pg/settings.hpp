// pg_once's settings that are not the outbox's (those live in outbox_send.cpp / outbox_notify.cpp).
#pragma once

namespace once::pg {

// Called from _PG_init: registers once.saga_retention.
void settings_init();

}  // namespace once::pg
