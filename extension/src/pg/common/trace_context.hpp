// Trace context (W3C traceparent / tracestate) on outbox messages, in the inbox and in sagas.
// The rules are in core/trace_context.hpp; this is where they meet PostgreSQL:
//  * A producer sets the context once per transaction, SET LOCAL once.traceparent = '00-...'
//    (and once.tracestate): a setting, because it is what PostgreSQL scopes to a transaction
//    (SET LOCAL) or a session, and any driver can issue it; an invalid value is refused by
//    SET itself (22023). Every message sent while it is set carries it as headers, unless the
//    message has its own.
//  * A traceparent / tracestate header a producer passes must be valid too (ON217).
//  * once.deliver sets once.traceparent / once.tracestate from the delivered message for as
//    long as its handlers run, so what they send (messages, saga starts) continues the trace.
//  * A saga keeps the traceparent it was started under; each step command carries a child of
//    it (same trace id, a new span id per command).
#pragma once

#include "core/json.hpp"
#include "pg/common/postgres_headers.hpp"

#include <string>

namespace once::pg {

// `headers` (a JSON object or nullptr; `parsed`: the same as JSON, if the caller has it) with
// the current trace context added where it has none. Throws invalid_trace_context for an
// invalid traceparent / tracestate header.
Jsonb* with_trace_context(Jsonb* headers, const Json* parsed = nullptr);

// once.traceparent now ("" when unset).
std::string current_traceparent();

// A traceparent for a new span under `parent`, or "" when `parent` is not valid.
std::string child_of(const std::string& parent);

// Sets once.traceparent / once.tracestate from a delivered message's headers (invalid values
// are ignored, as W3C asks of receivers) until end_trace_scope(level). Returns the GUC nest level.
int begin_trace_scope(Datum headers);
void end_trace_scope(int level);

}  // namespace once::pg
