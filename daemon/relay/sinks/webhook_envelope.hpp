// The http sink's envelope body (--http-body envelope): the message's routing metadata inside
// the request body, where a Standard Webhooks signature covers it. The signature covers
// webhook-id, webhook-timestamp and the body only, so with the default body (the payload) the
// X-Once-Topic, X-Once-Key and producer headers (and CloudEvents' ce-type, ce-subject) could
// be changed on a captured request and it would still verify. The shape follows Standard
// Webhooks' recommended payload ({"type", "timestamp", "data"}):
//   {"type": topic, "timestamp": created_at (RFC 3339, or null), "id": message id,
//    "key": key or null, "headers": the producer's headers object or null, "data": payload}
// Keys in this order, no whitespace between them; "data" and "headers" are the JSON text as the
// outbox holds it.
#pragma once

#include "message.hpp"

#include <string>

namespace once::relay {

enum class HttpBody { payload, envelope };

std::string webhook_envelope(const Message& m);

}  // namespace once::relay
