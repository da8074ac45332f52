// pg_once's settings (GUCs once.*): all defined in settings.cpp.
#pragma once

#include "pg/common/postgres_headers.hpp"

namespace once::pg {

// Called first from _PG_init: registers every once.* setting.
void settings_init();

// once.max_payload_bytes: the largest payload (with its headers) once.send accepts.
extern int max_payload_bytes;
// once.notify_interval: the notifier's shortest time between two NOTIFYs, in milliseconds.
extern int notify_interval_ms;

// once.traceparent / once.tracestate: the W3C trace context of the transaction ("" = none).
extern char* traceparent_setting;
extern char* tracestate_setting;

// once.transport: where once.send puts a message (docs/design.md, "WAL transport").
enum class OutboxTransport : int { table = 0, wal = 1 };
extern int outbox_transport;  // an OutboxTransport value (a GUC enum is an int)

// once.max_key_ttl in milliseconds: the longest ttl an idempotency key may be stored with.
int64 max_key_ttl_ms();

}  // namespace once::pg
