// A JetStream message as the inbox receives it: pure mapping from what the stream holds to
// once.deliver's arguments (no libnats here, so the rules are unit-tested).
//  * id: the Nats-Msg-Id header, which the outbound relay sets to the outbox message id (a
//    uuid), so a message published twice, or redelivered, is one inbox row. A Nats-Msg-Id
//    that is not a uuid (another publisher's) becomes a name-based uuid (version 5) of it;
//    without the header, a version 5 uuid of "<stream>:<stream sequence>": stable across
//    redeliveries of that stream message (but not across a purge that reuses sequences).
//  * topic: the Once-Topic header (the outbound relay's), else the subject.
//  * key: the Once-Key header (the outbound relay's); messages of one key are processed in
//    stream order. Without it the message has no key and no order.
//  * payload: the data when it is JSON (every pg_once message is); anything else is given
//    to the handlers as a JSON string (bytes that are not UTF-8 become U+FFFD).
//  * headers: every other header as a JSON object (first value of each name), except the
//    Nats-* headers of the server and the relay's own Once-*; empty when none is left.
#pragma once

#include "message.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace once::relay {

struct StreamMessage {
    std::string stream;
    uint64_t stream_seq = 0;
    std::string subject;
    std::vector<std::pair<std::string, std::string>> headers;   // in order; a name may repeat
    std::string data;
};

// The inbox's view of m (Message::id, topic, key, payload, headers).
Message inbound_message(const StreamMessage& m);

// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" in lower case when s is a uuid (any case), else "".
std::string canonical_uuid(const std::string& s);
// RFC 9562 name-based uuid (version 5, SHA-1) of `name` in pg_once's inbound namespace.
std::string name_based_uuid(const std::string& name);
// `text` as a JSON string literal (quotes included); invalid UTF-8 becomes U+FFFD.
std::string json_string(const std::string& text);

}  // namespace once::relay
