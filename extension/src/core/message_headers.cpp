#include "core/message_headers.hpp"

#include <array>

namespace once {

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

bool istarts_with(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

// RFC 9110 section 5.6.2: token = 1*tchar.
bool is_tchar(unsigned char c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    for (char t : std::string_view("!#$%&'*+-.^_`|~"))
        if (c == static_cast<unsigned char>(t)) return true;
    return false;
}

// Names the transport (HTTP/1.1 framing, routing, authentication, the body's type and
// encoding) or the relay sets; a second or replaced copy of any of them changes what the
// receiver does with the request. User-Agent and the Forwarded family are here because
// receivers log or trust them as facts about the sender, which the producer is not.
constexpr std::array<std::string_view, 19> kReservedNames = {
    "host",          "content-length", "transfer-encoding", "connection",      "keep-alive",
    "upgrade",       "te",             "trailer",           "expect",          "authorization",
    "cookie",        "set-cookie",     "content-type",      "content-encoding", "idempotency-key",
    "user-agent",    "forwarded",      "x-real-ip",         "http2-settings",
};

// Families: Proxy-* (proxy authentication and control), the relay's own X-Once-* and
// Once-*, webhook signing (Standard Webhooks: webhook-id, webhook-signature,
// webhook-timestamp), CloudEvents binary mode (ce-id, ce-source, ...), JetStream's
// Nats-* (Nats-Msg-Id dedupes, Nats-Expected-* fails the publish, Nats-Rollup purges the
// subject), and X-Forwarded-*.
constexpr std::array<std::string_view, 7> kReservedPrefixes = {
    "proxy-", "x-once-", "once-", "webhook-", "ce-", "nats-", "x-forwarded-",
};

}  // namespace

std::optional<std::string> header_refusal(std::string_view name, std::string_view value) {
    if (name.empty()) return std::string("the name is empty");
    if (name.size() > kMaxHeaderNameBytes)
        return "the name is longer than " + std::to_string(kMaxHeaderNameBytes) + " bytes";
    for (unsigned char c : name)
        if (!is_tchar(c)) return std::string("the name is not an HTTP token (RFC 9110)");
    for (std::string_view reserved : kReservedNames)
        if (iequals(name, reserved)) return std::string("the name is reserved for the transport or the relay");
    for (std::string_view prefix : kReservedPrefixes)
        if (istarts_with(name, prefix))
            return "names starting with \"" + std::string(prefix) + "\" are reserved for the transport or the relay";
    if (value.size() > kMaxHeaderValueBytes)
        return "the value is longer than " + std::to_string(kMaxHeaderValueBytes) + " bytes";
    for (unsigned char c : value)
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return std::string("the value contains a control character (CR, LF, NUL, ...)");
    return std::nullopt;
}

HeaderSelection select_headers(const std::vector<std::pair<std::string, std::string>>& headers) {
    HeaderSelection out;
    size_t total = 0;
    for (const auto& [name, value] : headers) {
        if (auto why = header_refusal(name, value)) {
            out.refused.push_back({name, *why});
            continue;
        }
        if (out.kept.size() >= kMaxHeaderCount) {
            out.refused.push_back({name, "more than " + std::to_string(kMaxHeaderCount) + " headers"});
            continue;
        }
        if (total + name.size() + value.size() > kMaxHeaderTotalBytes) {
            out.refused.push_back({name, "the headers exceed " + std::to_string(kMaxHeaderTotalBytes) + " bytes in all"});
            continue;
        }
        total += name.size() + value.size();
        out.kept.emplace_back(name, value);
    }
    return out;
}

}  // namespace once
