// What a JetStream publish error means for the message: retried later, or refused for good.
#pragma once

#include "message.hpp"

namespace once::relay {

// JetStream's API error code for "message size exceeds maximum allowed" (libnats:
// JSStreamMessageExceedsMaximumErr): the stream will never store this message.
constexpr int kJetStreamMessageTooLarge = 10054;

// The verdict for a publish that JetStream answered with an error (err_code 0: none given, e.g.
// a timeout). A refusal that no retry can change is dead at once, as an HTTP 4xx is; anything
// else (no responders, a leader election, a storage error) may pass later and is retried.
Verdict jetstream_publish_error_verdict(int err_code);

}  // namespace once::relay
