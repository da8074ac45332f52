// --source nats://[user:password@|token@]host:port[,host:port...]?stream=S&consumer=C[&filter=F]
//          [&source=NAME][&ack_wait=30s][&fetch=100]
// What the inbound relay reads: a JetStream stream through a durable pull consumer. The
// consumer is created when missing (filter F, explicit acks, AckWait ack_wait, MaxDeliver
// unlimited); an existing one is used as it is, unless its filter or ack policy differs from
// what the URI asks for (refused: two configurations fighting over one consumer would move
// its place). The inbox source the messages are recorded under is source=, else the stream's
// name: a message id is unique within its stream, so one source per stream dedupes a message
// whichever consumer brings it. Pure parsing: nothing is contacted.
#pragma once

#include "duration.hpp"
#include "uri.hpp"

#include <string>
#include <vector>

namespace once::relay {

struct InboundSource {
    std::vector<std::string> servers;   // nats://host:port each
    std::string user, password;         // user and password authentication
    std::string token;                  // nats://TOKEN@host
    std::string stream;
    std::string consumer;               // durable pull consumer name
    std::string filter;                 // subject filter; empty = every subject of the stream
    std::string inbox_source;           // once.deliver's source
    Millis ack_wait{30000};             // JetStream redelivers an unacknowledged message after this
    int fetch = 100;                    // messages asked for per pull request
    std::string description;            // the URI with secrets redacted, for logs
};

// Throws std::invalid_argument naming the problem.
InboundSource parse_inbound_source(const Uri& uri);

// Stream and consumer names: JetStream refuses '.', '*', '>', whitespace and path separators.
bool is_valid_jetstream_name(const std::string& name);

}  // namespace once::relay
