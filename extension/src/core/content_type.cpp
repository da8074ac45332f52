#include "core/content_type.hpp"

#include "core/json.hpp"

#include <cctype>
#include <cstring>

namespace once {

namespace {

// RFC 6838 section 4.2: restricted-name = restricted-name-first *126restricted-name-chars.
size_t restricted_name(std::string_view s, size_t pos) {
    size_t start = pos;
    if (pos >= s.size() || !std::isalnum(static_cast<unsigned char>(s[pos]))) return 0;
    ++pos;
    while (pos < s.size() && (std::isalnum(static_cast<unsigned char>(s[pos])) || std::strchr("!#$&-^_.+", s[pos]) != nullptr) &&
           s[pos] != '\0')
        ++pos;
    return pos - start <= 127 ? pos - start : 0;
}

// RFC 9110 tchar.
bool is_tchar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

size_t token(std::string_view s, size_t pos) {
    size_t start = pos;
    while (pos < s.size() && is_tchar(s[pos])) ++pos;
    return pos - start;
}

void skip_spaces(std::string_view s, size_t& pos) {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace

std::optional<std::string> content_type_error(std::string_view value) {
    if (value.empty()) return "content_type is empty";
    if (value.size() > kMaxContentTypeBytes)
        return "content_type is " + std::to_string(value.size()) + " bytes long, at most " +
               std::to_string(kMaxContentTypeBytes) + " are allowed";
    for (char c : value)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7E || c == '\t')
            return "content_type may contain printable ASCII characters only";
    size_t pos = 0;
    size_t n = restricted_name(value, pos);
    if (n == 0) return "content_type must start with a media type such as application/xml";
    pos += n;
    if (pos >= value.size() || value[pos] != '/') return "content_type has no '/' between type and subtype";
    ++pos;
    n = restricted_name(value, pos);
    if (n == 0) return "content_type has no valid subtype after '/'";
    pos += n;
    for (;;) {
        skip_spaces(value, pos);
        if (pos == value.size()) return std::nullopt;
        if (value[pos] != ';') return "content_type has '" + std::string(1, value[pos]) + "' where ';' or its end belongs";
        ++pos;
        skip_spaces(value, pos);
        n = token(value, pos);
        if (n == 0) return "content_type has a parameter without a name";
        pos += n;
        if (pos >= value.size() || value[pos] != '=') return "content_type has a parameter without '=' and a value";
        ++pos;
        if (pos < value.size() && value[pos] == '"') {
            ++pos;
            for (;;) {
                if (pos >= value.size()) return "content_type has an unterminated quoted parameter value";
                if (value[pos] == '"') break;
                if (value[pos] == '\\') ++pos;
                ++pos;
            }
            ++pos;
        } else {
            n = token(value, pos);
            if (n == 0) return "content_type has a parameter without a value";
            pos += n;
        }
    }
}

bool is_json_content_type(std::string_view content_type) {
    std::string_view essence = content_type.substr(0, content_type.find(';'));
    while (!essence.empty() && (essence.back() == ' ' || essence.back() == '\t')) essence.remove_suffix(1);
    const std::string media = lower(essence);
    if (media == "application/json") return true;
    return media.size() > 5 && media.compare(media.size() - 5, 5, "+json") == 0;
}

std::string delivered_body(const std::string& payload_json, std::string_view content_type) {
    if (content_type.empty() || is_json_content_type(content_type)) return payload_json;
    try {
        Json parsed = Json::parse(payload_json);
        if (parsed.is_string()) return parsed.as_string();
    } catch (const std::exception&) {
    }
    return payload_json;
}

}  // namespace once
