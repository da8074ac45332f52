#include "sinks/cloudevents.hpp"

#include <cctype>

namespace once::relay {

namespace {

const char* kHex = "0123456789ABCDEF";

bool digits(std::string_view s, size_t pos, size_t n) {
    if (pos + n > s.size()) return false;
    for (size_t i = pos; i < pos + n; ++i)
        if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    return true;
}

std::string uri_segment(std::string_view s) {
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 15]);
        }
    }
    return out;
}

}  // namespace

std::string ce_percent_encode(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (unsigned char c : value) {
        if (c > 0x20 && c < 0x7f && c != '"' && c != '%') {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 15]);
        }
    }
    return out;
}

std::optional<std::string> rfc3339_from_pg(std::string_view s) {
    // YYYY-MM-DD HH:MM:SS[.frac](+|-)HH[:MM]
    if (!(digits(s, 0, 4) && s.size() > 19 && s[4] == '-' && digits(s, 5, 2) && s[7] == '-' && digits(s, 8, 2) &&
          s[10] == ' ' && digits(s, 11, 2) && s[13] == ':' && digits(s, 14, 2) && s[16] == ':' && digits(s, 17, 2)))
        return std::nullopt;
    size_t pos = 19;
    if (s[pos] == '.') {
        size_t b = ++pos;
        while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
        if (pos == b) return std::nullopt;
    }
    if (pos >= s.size() || (s[pos] != '+' && s[pos] != '-') || !digits(s, pos + 1, 2)) return std::nullopt;
    std::string out(s.substr(0, pos));
    out[10] = 'T';
    std::string_view offset = s.substr(pos);
    if (offset.size() == 3) {
        out.append(offset).append(":00");
    } else if (offset.size() == 6 && offset[3] == ':' && digits(offset, 4, 2)) {
        out.append(offset);
    } else {
        return std::nullopt;   // seconds in the offset (historic local mean time) or trailing text (BC)
    }
    return out;
}

std::string default_cloudevents_source(const std::string& database, const std::string& relay_name) {
    return "/pg_once/" + uri_segment(database) + "/" + uri_segment(relay_name);
}

std::vector<std::pair<std::string, std::string>> cloudevents_headers(const Message& m, const std::string& source,
                                                                     CloudEventsBinding binding) {
    std::vector<std::pair<std::string, std::string>> h;
    h.emplace_back("ce-specversion", "1.0");
    h.emplace_back("ce-id", ce_percent_encode(m.id));
    h.emplace_back("ce-source", ce_percent_encode(source));
    h.emplace_back("ce-type", ce_percent_encode(m.topic));
    if (m.has_key) h.emplace_back("ce-subject", ce_percent_encode(m.key));
    if (auto t = rfc3339_from_pg(m.created_at)) h.emplace_back("ce-time", *t);
    // HTTP: datacontenttype is the Content-Type header the sink always sends.
    if (binding == CloudEventsBinding::nats)
        h.emplace_back("ce-datacontenttype",
                       m.content_type.empty() ? std::string("application/json") : ce_percent_encode(m.content_type));
    return h;
}

}  // namespace once::relay
