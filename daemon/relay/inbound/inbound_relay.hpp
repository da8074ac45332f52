// once-relay --source: the inbound relay. A JetStream pull consumer (jetstream_consumer.hpp)
// feeds the inbox database through the PostgreSQL sink (sinks/postgres_sink.hpp: once.deliver
// and the handlers in one transaction, several messages per transaction, per-message
// fallback). One poll() loop, as in the outbound relay:
//
//   fetched -> lanes (inbound_lanes.hpp: per-key order, the fence) -> once.deliver
//   -> processed/duplicate/poison: JetStream ack, sent only after the transaction committed
//   -> a failed attempt (handler error, no handler, database unreachable): not acked, held
//      at the head of its key's lane and tried again after a backoff; JetStream keeps its
//      place (the relay sends "in progress" for every held message, so AckWait does not
//      expire while it waits).
//
// A crash loses nothing: unacknowledged messages come back after AckWait, and the inbox
// answers duplicate for those that had committed.
#pragma once

#include "metrics.hpp"
#include "options.hpp"
#include "signals.hpp"
#include "systemd_notify.hpp"

namespace once::relay {

// Runs until SIGTERM/SIGINT; returns the exit code. Throws SourceError/SinkError when the
// stream, the consumer or the database cannot be used at start.
int run_inbound(const Options& options, Metrics& metrics, SignalFd& signals, SystemdNotifier& notifier);

// --check-config with --source: reaches the inbox database and the stream (the consumer is
// created if missing, as at start), prints "configuration OK", returns 0. Throws as above.
int check_inbound_config(const Options& options);

}  // namespace once::relay
