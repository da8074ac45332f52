// The loadable module: magic block and load-time initialisation.
#include "postgres_headers.hpp"

#include "outbox_key_order.hpp"
#include "outbox_locked.hpp"
#include "outbox_notify.hpp"
#include "settings.hpp"

extern "C" {
ONCE_MODULE_MAGIC;

void _PG_init(void);
void _PG_init(void) {
    once::pg::outbox_init();  // GUCs once.*payload*/notify*, commit callback, notifier shmem
    once::pg::outbox_key_order_init();  // per-key order stamped at commit
    once::pg::outbox_locked_init();  // claim_locked messages settled before commit
    once::pg::settings_init();  // GUC once.saga_retention
}
}
