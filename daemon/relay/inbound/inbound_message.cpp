#include "inbound/inbound_message.hpp"

#include "core/json.hpp"

#include <openssl/sha.h>

#include <cctype>
#include <exception>

namespace once::relay {

namespace {

bool iequals_prefix(const std::string& s, const char* prefix) {
    size_t i = 0;
    for (; prefix[i]; ++i)
        if (i >= s.size() || std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
    return true;
}

bool iequals(const std::string& a, const char* b) {
    return iequals_prefix(a, b) && a.size() == std::char_traits<char>::length(b);
}

const std::string* header(const StreamMessage& m, const char* lower_name) {
    for (const auto& [k, v] : m.headers)
        if (iequals(k, lower_name)) return &v;
    return nullptr;
}

// Length of the valid UTF-8 sequence at s[i], or 0.
size_t utf8_sequence(const std::string& s, size_t i) {
    auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = b(i);
    size_t n;
    uint32_t cp;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
    else return 0;
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

}  // namespace

std::string canonical_uuid(const std::string& s) {
    if (s.size() != 36) return {};
    std::string out;
    out.reserve(36);
    for (size_t i = 0; i < 36; ++i) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return {};
            out.push_back('-');
        } else {
            if (!std::isxdigit(static_cast<unsigned char>(c))) return {};
            out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        }
    }
    return out;
}

std::string name_based_uuid(const std::string& name) {
    // pg_once's namespace for inbound ids: the v5 uuid of "pg_once inbound" in the URL namespace.
    static const unsigned char kNamespace[16] = {0x8c, 0x1f, 0x3b, 0x52, 0x6e, 0x0d, 0x5a, 0x41,
                                                 0x9b, 0x77, 0x2d, 0x4e, 0x10, 0x6a, 0xc3, 0x95};
    std::string input(reinterpret_cast<const char*>(kNamespace), 16);
    input += name;
    unsigned char h[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), h);
    h[6] = static_cast<unsigned char>((h[6] & 0x0F) | 0x50);
    h[8] = static_cast<unsigned char>((h[8] & 0x3F) | 0x80);
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
        out.push_back(hex[h[i] >> 4]);
        out.push_back(hex[h[i] & 15]);
    }
    return out;
}

std::string json_string(const std::string& text) {
    static const char* hex = "0123456789abcdef";
    std::string out = "\"";
    for (size_t i = 0; i < text.size();) {
        auto c = static_cast<unsigned char>(text[i]);
        size_t n = utf8_sequence(text, i);
        if (n == 0) { out += "\\ufffd"; ++i; continue; }
        if (n > 1) { out.append(text, i, n); i += n; continue; }
        ++i;
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    if (c == 0) { out += "\\ufffd"; break; }   // PostgreSQL text cannot hold NUL
                    out += "\\u00";
                    out.push_back(hex[c >> 4]);
                    out.push_back(hex[c & 15]);
                } else {
                    out.push_back(static_cast<char>(c));
                }
        }
    }
    out += "\"";
    return out;
}

Message inbound_message(const StreamMessage& m) {
    Message out;
    const std::string* msg_id = header(m, "nats-msg-id");
    if (msg_id && !msg_id->empty()) {
        out.id = canonical_uuid(*msg_id);
        if (out.id.empty()) out.id = name_based_uuid("nats-msg-id:" + *msg_id);
    } else {
        out.id = name_based_uuid(m.stream + ":" + std::to_string(m.stream_seq));
    }
    const std::string* topic = header(m, "once-topic");
    out.topic = topic && !topic->empty() ? *topic : m.subject;
    if (const std::string* key = header(m, "once-key")) {
        out.key = *key;
        out.has_key = true;
    }
    bool is_json = false;
    try {
        (void)once::Json::parse(m.data);
        is_json = true;
    } catch (const std::exception&) {
    }
    out.payload = is_json ? m.data : json_string(m.data);
    std::string headers;
    std::vector<std::string> seen;
    for (const auto& [k, v] : m.headers) {
        if (iequals_prefix(k, "nats-") || iequals_prefix(k, "once-")) continue;
        bool dup = false;
        for (const auto& s : seen) dup |= s == k;
        if (dup) continue;
        seen.push_back(k);
        headers += (headers.empty() ? "{" : ",") + json_string(k) + ":" + json_string(v);
    }
    if (!headers.empty()) out.headers = headers + "}";
    return out;
}

}  // namespace once::relay
