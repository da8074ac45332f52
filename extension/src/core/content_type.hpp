// A message's content type (once.send's content_type): the media type its sinks label the
// payload with (HTTP Content-Type, NATS Content-Type, CloudEvents datacontenttype). NULL is
// application/json, the payload as it always was.
//
// The payload stays jsonb whatever the content type. For a JSON media type (application/json
// or any "+json" subtype, RFC 6839) the sinks send the payload's JSON text as they always did.
// For any other media type the payload must be a JSON string, and the sinks send the string's
// value as the body (application/xml with payload '"<order/>"' delivers <order/>): a body
// labelled application/xml must be XML, not a JSON string of it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace once {

// The longest content type once.send accepts, in bytes.
inline constexpr size_t kMaxContentTypeBytes = 255;

// Why `value` is not a content type once.send accepts, or nullopt when it is one: a media
// type (RFC 6838 restricted names "type/subtype"), optionally parameters ("; name=value",
// value a token or a quoted string, RFC 9110), printable ASCII, at most kMaxContentTypeBytes.
std::optional<std::string> content_type_error(std::string_view value);

// Whether a (valid) content type is a JSON one: application/json or a "+json" subtype, in
// any case. The payload of the others is a JSON string whose value is the body.
bool is_json_content_type(std::string_view content_type);

// The bytes a sink sends for a payload (JSON text) of a content type (empty: none, which is
// application/json): the JSON text itself for a JSON type, else the value of the JSON string.
// A payload that is not a JSON string under a non-JSON type (once.send refuses to send one)
// goes as its text.
std::string delivered_body(const std::string& payload_json, std::string_view content_type);

}  // namespace once
