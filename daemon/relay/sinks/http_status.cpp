#include "sinks/http_status.hpp"

#include "core/error.hpp"
#include "core/json.hpp"

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
    once::Json headers;
    try {
        headers = once::Json::parse(json);   // the extension's parser: one JSON reading everywhere
    } catch (const once::Error& e) {
        throw std::invalid_argument(std::string("message headers are not JSON: ") + e.what());
    }
    if (!headers.is_object()) throw std::invalid_argument("message headers are not a JSON object");
    for (const auto& [name, value] : headers.members()) {
        // A string is the header's value as it is; a number as it was written; anything else
        // as its compact JSON text.
        std::string text = value.is_string() ? value.as_string() : value.is_number() ? value.number_text() : value.dump();
        if (http_token(name) && text.find_first_of("\r\n") == std::string::npos)
            out.emplace_back(name, std::move(text));
        else if (skipped)
            skipped->push_back(name);
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
