// once-relay --listen-webhooks: reads the senders' secrets (--webhooks-secret-file, the
// systemd credential inbound-webhook-secret), starts the receiver (inbound/webhook_receiver)
// and runs it until SIGTERM/SIGINT, under systemd's notify protocol and watchdog.
#pragma once

namespace once::relay {

struct Options;

// Returns the exit status. Throws std::runtime_error (or SinkError) when it cannot start.
int run_webhook_receiver(const Options& options);

}  // namespace once::relay
