// Relay wake-ups for the outbox. Relays LISTEN on kOutboxChannel.
//
// With pg_once in shared_preload_libraries a transaction that sent messages only marks its
// database's slot in shared memory at commit (an XactCallback) and sets the latch of that
// database's notifier, a background worker started on demand. The worker sends one NOTIFY per
// burst, at most every once.notify_interval milliseconds, and exits after a few idle seconds
// (so DROP DATABASE is not blocked). Producers never take the cluster-wide NOTIFY lock.
//
// Without preloading (or when no worker can be started) every transaction that sent messages
// NOTIFYs the channel itself, which serialises producer commits on that lock.
#pragma once

#include "core/names.hpp"
#include "pg/common/postgres_headers.hpp"

namespace once::pg {

constexpr const char* kOutboxChannel = kOutboxWakeChannel;

// Called from _PG_init: transaction callback, shared memory hooks.
void outbox_init();
// The current transaction wrote a message: make sure relays get woken after it commits.
void outbox_mark_sent();
bool outbox_notifier_preloaded();

}  // namespace once::pg

extern "C" PGDLLEXPORT void once_outbox_notifier_main(Datum arg);
