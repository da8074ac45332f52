// What an inbound webhook request means for the inbox: the message (id, topic, payload,
// headers) that once.deliver gets, or the HTTP status that refuses it. Three shapes, told
// apart by their headers, all signed the Standard Webhooks way (inbound/webhook_verify):
//
//   - a Standard Webhooks request: the message id is webhook-id, the topic the path's last
//     part (POST /webhooks/<topic>) or, for POST /webhooks, the body's "type" field (Standard
//     Webhooks' recommended payload shape, and once-relay's --http-body envelope), the payload
//     the body;
//   - a CloudEvent in binary content mode (a ce-specversion header): id ce-id, topic ce-type,
//     payload the body;
//   - a CloudEvent in structured content mode (Content-Type application/cloudevents+json): id,
//     topic and payload are the body's "id", "type" and "data".
//
// A CloudEvent's id must equal its webhook-id, so that the message id is covered by the
// signature in both modes (a binary event's ce-* headers are not). The inbox headers
// (once.inbound.headers) hold webhook-timestamp, the CloudEvents attributes other than id,
// type and data ("ce-source", ...), and traceparent/tracestate when sent (once.deliver runs
// the handlers in that trace). Pure: no I/O.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace once::relay {

// Request headers by lower-case name.
using InboundHeaders = std::map<std::string, std::string>;

struct InboundMessage {
    std::string id;
    std::string topic;
    std::string payload;   // JSON text
    std::string headers;   // JSON object text
};

struct InboundParse {
    std::optional<InboundMessage> message;
    int status = 0;        // when refused: 400, 404, 415
    std::string reason;    // when refused: for the answer's body and the log
};

// True for the paths the receiver serves: /webhooks and /webhooks/<topic>.
bool is_webhook_path(std::string_view path);

// The request's message, or why it is refused. `path` is the URL path without the query.
InboundParse parse_inbound_request(std::string_view path, const InboundHeaders& headers, std::string_view body);

}  // namespace once::relay
