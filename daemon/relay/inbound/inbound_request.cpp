#include "inbound/inbound_request.hpp"

#include "core/error.hpp"
#include "core/inbox.hpp"
#include "core/json.hpp"
#include "core/topic.hpp"

namespace once::relay {

namespace {

constexpr std::string_view kPrefix = "/webhooks";

InboundParse refuse(int status, std::string reason) {
    InboundParse p;
    p.status = status;
    p.reason = std::move(reason);
    return p;
}

const std::string* header(const InboundHeaders& h, const char* name) {
    auto it = h.find(name);
    return it == h.end() ? nullptr : &it->second;
}

// The media type without parameters, lower case: "Application/JSON; charset=utf-8" -> "application/json".
std::string media_type(const InboundHeaders& h) {
    const std::string* v = header(h, "content-type");
    if (!v) return "";
    std::string t = v->substr(0, v->find(';'));
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
    size_t b = t.find_first_not_of(" \t");
    t = b == std::string::npos ? "" : t.substr(b);
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return t;
}

bool is_json_media_type(std::string_view t) {
    return t.empty() || t == "application/json" || (t.size() > 5 && t.substr(t.size() - 5) == "+json");
}

// The CloudEvents HTTP binding percent-encodes header values: %XX is one byte.
std::optional<std::string> percent_decoded(std::string_view s) {
    auto hex = [](char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') { out.push_back(s[i]); continue; }
        if (i + 2 >= s.size()) return std::nullopt;
        int h = hex(s[i + 1]), l = hex(s[i + 2]);
        if (h < 0 || l < 0) return std::nullopt;
        out.push_back(static_cast<char>(h * 16 + l));
        i += 2;
    }
    return out;
}

void exact_json(const Json& j, std::string& out) {
    switch (j.type()) {
    case Json::Type::number:
        out += j.number_text().empty() ? j.dump() : j.number_text();
        return;
    case Json::Type::array: {
        out += '[';
        bool first = true;
        for (const auto& item : j.items()) {
            if (!first) out += ',';
            first = false;
            exact_json(item, out);
        }
        out += ']';
        return;
    }
    case Json::Type::object: {
        out += '{';
        bool first = true;
        for (const auto& [k, v] : j.members()) {
            if (!first) out += ',';
            first = false;
            out += Json::string(k).dump();
            out += ':';
            exact_json(v, out);
        }
        out += '}';
        return;
    }
    default:
        out += j.dump();
    }
}

std::optional<Json> parse_json(std::string_view body) {
    try {
        return Json::parse(body);
    } catch (const once::Error&) {
        return std::nullopt;
    }
}

// Checks the id and topic with the inbox's own rules, so that once.deliver never refuses
// them (which would answer 5xx, and the sender would send the same request again).
std::optional<InboundParse> check_id_and_topic(const InboundMessage& m) {
    try {
        once::validate_message_id(m.id);
    } catch (const once::Error& e) {
        return refuse(400, std::string("message id: ") + e.what());
    }
    try {
        once::validate_topic(m.topic);
    } catch (const once::Error& e) {
        return refuse(400, "topic \"" + m.topic + "\": " + e.what());
    }
    return std::nullopt;
}

void copy_trace_headers(const InboundHeaders& h, Json& out) {
    for (const char* name : {"traceparent", "tracestate"})
        if (const std::string* v = header(h, name)) out.set(name, Json::string(*v));
}

}  // namespace

bool is_webhook_path(std::string_view path) {
    if (path.substr(0, kPrefix.size()) != kPrefix) return false;
    std::string_view rest = path.substr(kPrefix.size());
    if (rest.empty() || rest == "/") return true;
    return rest[0] == '/' && rest.find('/', 1) == std::string_view::npos;
}

InboundParse parse_inbound_request(std::string_view path, const InboundHeaders& headers, std::string_view body) {
    if (!is_webhook_path(path)) return refuse(404, "not found: post to /webhooks or /webhooks/<topic>");
    std::string_view path_topic = path.substr(kPrefix.size());
    if (!path_topic.empty()) path_topic.remove_prefix(1);
    const std::string* webhook_id = header(headers, "webhook-id");
    std::string type = media_type(headers);
    InboundMessage m;
    Json inbox_headers = Json::object();
    if (const std::string* ts = header(headers, "webhook-timestamp")) inbox_headers.set("webhook-timestamp", Json::string(*ts));

    if (type == "application/cloudevents+json" || header(headers, "ce-specversion")) {
        if (!path_topic.empty())
            return refuse(400, "a CloudEvent's topic is its type: post it to /webhooks, not /webhooks/<topic>");
    }
    if (type == "application/cloudevents+json") {
        auto doc = parse_json(body);
        if (!doc || !doc->is_object()) return refuse(400, "the body is not a JSON object (structured CloudEvent)");
        const Json* spec = doc->find("specversion");
        if (!spec || !spec->is_string() || spec->as_string() != "1.0")
            return refuse(400, "specversion must be \"1.0\" (CloudEvents 1.0)");
        for (const char* required : {"id", "type", "source"}) {
            const Json* v = doc->find(required);
            if (!v || !v->is_string() || v->as_string().empty())
                return refuse(400, std::string("the CloudEvent has no ") + required + " (a non-empty string)");
        }
        if (doc->find("data_base64")) return refuse(415, "data_base64 is not supported: the inbox takes JSON data");
        if (const Json* dct = doc->find("datacontenttype")) {
            InboundHeaders ct{{"content-type", dct->is_string() ? dct->as_string() : std::string("?")}};
            if (!is_json_media_type(media_type(ct)))
                return refuse(415, "datacontenttype must be JSON (application/json or */*+json)");
        }
        m.id = doc->find("id")->as_string();
        m.topic = doc->find("type")->as_string();
        const Json* data = doc->find("data");
        if (data) exact_json(*data, m.payload);
        else m.payload = "null";
        for (const auto& [name, value] : doc->members()) {
            if (name == "id" || name == "type" || name == "data" || name == "specversion") continue;
            std::string text;
            if (value.is_string()) text = value.as_string();
            else exact_json(value, text);
            if (name == "traceparent" || name == "tracestate") inbox_headers.set(name, Json::string(text));
            else inbox_headers.set("ce-" + name, Json::string(text));
        }
    } else if (const std::string* spec = header(headers, "ce-specversion")) {
        if (*spec != "1.0") return refuse(400, "ce-specversion must be 1.0 (CloudEvents 1.0)");
        if (!is_json_media_type(type)) return refuse(415, "Content-Type must be JSON (application/json or */*+json)");
        for (const char* required : {"ce-id", "ce-type", "ce-source"}) {
            const std::string* v = header(headers, required);
            if (!v || v->empty()) return refuse(400, std::string("the CloudEvent has no ") + required + " header");
        }
        for (const auto& [name, value] : headers) {
            if (name.size() <= 3 || name.compare(0, 3, "ce-") != 0) continue;
            auto decoded = percent_decoded(value);
            if (!decoded) return refuse(400, "header " + name + ": bad percent-encoding");
            if (name == "ce-id") m.id = *decoded;
            else if (name == "ce-type") m.topic = *decoded;
            else if (name != "ce-specversion") inbox_headers.set(name, Json::string(*decoded));
        }
        auto doc = parse_json(body);
        if (!doc) return refuse(400, "the body is not JSON");
        m.payload = std::string(body);
    } else {
        if (!is_json_media_type(type)) return refuse(415, "Content-Type must be JSON (application/json or */*+json)");
        auto doc = parse_json(body);
        if (!doc) return refuse(400, "the body is not JSON");
        m.id = webhook_id ? *webhook_id : std::string();
        if (!path_topic.empty()) {
            m.topic = std::string(path_topic);
        } else {
            const Json* t = doc->is_object() ? doc->find("type") : nullptr;
            if (!t || !t->is_string())
                return refuse(400, "no topic: post to /webhooks/<topic>, or send a JSON object with a \"type\" string");
            m.topic = t->as_string();
        }
        m.payload = std::string(body);
    }
    if (m.id.empty() || !webhook_id) return refuse(400, "no message id (webhook-id)");
    if (*webhook_id != m.id)
        return refuse(400, "the CloudEvent's id differs from its webhook-id: they must be equal, so the id is signed");
    if (auto bad = check_id_and_topic(m)) return *bad;
    copy_trace_headers(headers, inbox_headers);
    m.headers = inbox_headers.dump();
    InboundParse p;
    p.message = std::move(m);
    return p;
}

}  // namespace once::relay
