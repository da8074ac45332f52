#include "sinks/http_status.hpp"

#include <curl/curl.h>

#include <cctype>
#include <stdexcept>

namespace once::relay {

Verdict classify_http_status(long status) {
    if (status >= 200 && status < 300) return Verdict::delivered;
    if (status == 408 || status == 425 || status == 429 || (status >= 500 && status < 600)) return Verdict::retry;
    if (status <= 0) return Verdict::retry;   // no answer at all
    return Verdict::dead;
}

std::optional<Millis> parse_retry_after(const std::string& raw, std::time_t now) {
    std::string value = raw;
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
    size_t b = value.find_first_not_of(" \t");
    if (b == std::string::npos) return std::nullopt;
    value = value.substr(b);
    constexpr int64_t kCapMs = 24LL * 3600 * 1000;
    if (value.find_first_not_of("0123456789") == std::string::npos) {
        if (value.size() > 9) return Millis(kCapMs);
        int64_t s = std::stoll(value);
        return Millis(std::min<int64_t>(s * 1000, kCapMs));
    }
    std::time_t t = curl_getdate(value.c_str(), nullptr);
    if (t == -1) return std::nullopt;
    int64_t delta = static_cast<int64_t>(t - now) * 1000;
    if (delta < 0) delta = 0;
    return Millis(std::min<int64_t>(delta, kCapMs));
}

namespace {

struct Parser {
    const std::string& s;
    size_t i = 0;
    void ws() { while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i; }
    [[noreturn]] void fail(const char* what) {
        throw std::invalid_argument(std::string("message headers are not a JSON object: ") + what);
    }
    std::string string_value() {
        if (i >= s.size() || s[i] != '"') fail("expected a string");
        ++i;
        std::string out;
        while (i < s.size() && s[i] != '"') {
            char c = s[i++];
            if (c != '\\') { out.push_back(c); continue; }
            if (i >= s.size()) fail("bad escape");
            char e = s[i++];
            switch (e) {
                case 'n': out.push_back('\n'); break;
                case 't': out.push_back('\t'); break;
                case 'r': out.push_back('\r'); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'u': {
                    if (i + 4 > s.size()) fail("bad \\u escape");
                    unsigned cp = std::stoul(s.substr(i, 4), nullptr, 16);
                    i += 4;
                    if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= s.size() && s[i] == '\\' && s[i + 1] == 'u') {
                        unsigned lo = std::stoul(s.substr(i + 2, 4), nullptr, 16);
                        i += 6;
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    if (cp < 0x80) out.push_back(static_cast<char>(cp));
                    else if (cp < 0x800) { out.push_back(static_cast<char>(0xC0 | (cp >> 6))); out.push_back(static_cast<char>(0x80 | (cp & 0x3F))); }
                    else if (cp < 0x10000) { out.push_back(static_cast<char>(0xE0 | (cp >> 12))); out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F))); out.push_back(static_cast<char>(0x80 | (cp & 0x3F))); }
                    else { out.push_back(static_cast<char>(0xF0 | (cp >> 18))); out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F))); out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F))); out.push_back(static_cast<char>(0x80 | (cp & 0x3F))); }
                    break;
                }
                default: out.push_back(e);
            }
        }
        if (i >= s.size()) fail("unterminated string");
        ++i;
        return out;
    }
    // Raw JSON text of any value (nested containers included).
    std::string raw_value() {
        size_t start = i;
        int depth = 0;
        bool in_str = false;
        for (; i < s.size(); ++i) {
            char c = s[i];
            if (in_str) {
                if (c == '\\') ++i;
                else if (c == '"') in_str = false;
                continue;
            }
            if (c == '"') in_str = true;
            else if (c == '{' || c == '[') ++depth;
            else if (c == '}' || c == ']') {
                if (depth == 0) break;
                --depth;
            } else if (c == ',' && depth == 0) break;
        }
        std::string v = s.substr(start, i - start);
        while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
        if (v.empty()) fail("missing value");
        return v;
    }
};

bool http_token(const std::string& name) {
    if (name.empty()) return false;
    for (unsigned char c : name)
        if (!(std::isalnum(c) || std::string("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string::npos))
            return false;
    return true;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> message_headers(const std::string& json,
                                                                 std::vector<std::string>* skipped) {
    std::vector<std::pair<std::string, std::string>> out;
    if (json.empty() || json == "null") return out;
    Parser p{json};
    p.ws();
    if (p.i >= json.size() || json[p.i] != '{') p.fail("it does not start with {");
    ++p.i;
    p.ws();
    if (p.i < json.size() && json[p.i] == '}') return out;
    while (true) {
        p.ws();
        std::string name = p.string_value();
        p.ws();
        if (p.i >= json.size() || json[p.i] != ':') p.fail("expected :");
        ++p.i;
        p.ws();
        std::string value = (p.i < json.size() && json[p.i] == '"') ? p.string_value() : p.raw_value();
        if (http_token(name) && value.find_first_of("\r\n") == std::string::npos)
            out.emplace_back(name, value);
        else if (skipped)
            skipped->push_back(name);
        p.ws();
        if (p.i < json.size() && json[p.i] == ',') { ++p.i; continue; }
        if (p.i < json.size() && json[p.i] == '}') break;
        p.fail("expected , or }");
    }
    return out;
}

std::string body_excerpt(const std::string& body, size_t max) {
    std::string out;
    for (char c : body.substr(0, max)) out.push_back((c == '\n' || c == '\r' || c == '\t') ? ' ' : c);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    if (body.size() > max) out += "...";
    return out;
}

}  // namespace once::relay
