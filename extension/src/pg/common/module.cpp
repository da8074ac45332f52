// The loadable module: magic block and load-time initialisation.
#include "pg/common/postgres_headers.hpp"

#include "pg/common/permission_hint.hpp"
#include "pg/common/restricted_call.hpp"
#include "pg/common/settings.hpp"
#include "pg/outbox/key_seq_memory.hpp"
#include "pg/outbox/outbox_key_order.hpp"
#include "pg/outbox/outbox_locked.hpp"
#include "pg/outbox/outbox_notify.hpp"

extern "C" {
ONCE_MODULE_MAGIC;

void _PG_init(void);
// The transaction callbacks: PostgreSQL calls them in the reverse order of registration, so
// at commit outbox_locked's runs first (it settles claim_locked messages, which may release
// keys), then outbox_key_order's (it stamps per-key order and promotes released keys' next
// messages, which may mark the transaction as one that made messages claimable), then the
// notifier's (it wakes relays for such transactions). Keep this order when adding one.
void _PG_init(void) {
    once::pg::settings_init();  // every GUC once.*
    once::pg::outbox_init();  // commit callback, notifier shmem
    once::pg::outbox_key_order_init();  // per-key order stamped at commit
    once::pg::key_seq_memory_init();    // greatest key_seq per bucket (keyed WAL messages)
    once::pg::outbox_locked_init();  // claim_locked messages settled before commit
    once::pg::permission_hint_init();  // HINT naming the role to grant on permission errors
    once::pg::restricted_call_init();  // temporary objects created by another role's code
}
}
