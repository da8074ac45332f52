// CloudEvents 1.0, binary content mode (HTTP and NATS protocol bindings): the message body is
// the event's data and each context attribute travels as a "ce-<name>" header:
//   ce-specversion 1.0, ce-id = message id, ce-source = the relay's source URI,
//   ce-type = topic, ce-subject = key (when the message has one), ce-time = created_at
//   (RFC 3339), and the data's media type (the message's content_type, application/json
//   without one): HTTP's Content-Type, NATS's ce-datacontenttype (the NATS binding maps
//   datacontenttype like any other attribute).
// Header values are percent-encoded as both bindings require (space, '"', '%' and anything
// outside printable ASCII), so a key with any UTF-8 in it arrives intact.
#pragma once

#include "message.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace once::relay {

enum class CloudEventsBinding { http, nats };

std::vector<std::pair<std::string, std::string>> cloudevents_headers(const Message& m, const std::string& source,
                                                                     CloudEventsBinding binding);

// The bindings' header value encoding (upper-case hex).
std::string ce_percent_encode(std::string_view value);

// PostgreSQL's ISO timestamptz text ("2026-11-26 06:19:12.123456+00", "... +05:30") as
// RFC 3339 ("2026-11-26T06:19:12.123456+00:00"); nullopt for anything else (another
// DateStyle, infinity, BC, an offset with seconds).
std::optional<std::string> rfc3339_from_pg(std::string_view pg);

// The default ce-source: "/pg_once/<database>/<relay name>" (URI-reference; both parts
// percent-encoded outside RFC 3986's unreserved characters).
std::string default_cloudevents_source(const std::string& database, const std::string& relay_name);

}  // namespace once::relay
