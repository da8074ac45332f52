#include "sinks/webhook_envelope.hpp"

#include "core/json.hpp"
#include "sinks/cloudevents.hpp"   // rfc3339_from_pg

namespace once::relay {

namespace {

void append_quoted(std::string& out, std::string_view s) { once::append_json_string(out, s); }

}  // namespace

std::string webhook_envelope(const Message& m) {
    std::string out;
    out.reserve(m.payload.size() + m.headers.size() + m.topic.size() + m.key.size() + 128);
    out += "{\"type\":";
    append_quoted(out, m.topic);
    out += ",\"timestamp\":";
    if (auto t = rfc3339_from_pg(m.created_at)) append_quoted(out, *t);
    else out += "null";
    out += ",\"id\":";
    append_quoted(out, m.id);
    out += ",\"key\":";
    if (m.has_key) append_quoted(out, m.key);
    else out += "null";
    out += ",\"headers\":";
    out += m.headers.empty() ? std::string("null") : m.headers;
    out += ",\"data\":";
    out += m.payload.empty() ? std::string("null") : m.payload;
    out += "}";
    return out;
}

}  // namespace once::relay
