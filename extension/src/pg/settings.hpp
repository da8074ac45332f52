// pg_once's settings that are not the outbox's (those live in outbox_send.cpp / outbox_notify.cpp).
#pragma once

#include "postgres_headers.hpp"

namespace once::pg {

// Called from _PG_init: registers once.saga_retention and once.max_key_ttl.
void settings_init();

// once.max_key_ttl in milliseconds: the longest ttl an idempotency key may be stored with.
int64 max_key_ttl_ms();

}  // namespace once::pg
