#include "sinks/webhook_signature.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <sstream>
#include <stdexcept>

namespace once::relay {

std::string base64_encode(std::string_view bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3), '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    out.resize(static_cast<size_t>(n));
    return out;
}

std::string base64_decode(std::string_view text) {
    if (text.empty() || text.size() % 4 != 0) throw std::invalid_argument("not base64 (its length is not a multiple of 4)");
    for (size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        bool pad_ok = c == '=' && i >= text.size() - 2 && (i == text.size() - 1 || text.back() == '=');
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || pad_ok))
            throw std::invalid_argument("not base64 (a character outside A-Z a-z 0-9 + / =)");
    }
    std::string out(3 * text.size() / 4, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
    if (n < 0) throw std::invalid_argument("not base64");
    size_t pad = text.back() == '=' ? (text[text.size() - 2] == '=' ? 2 : 1) : 0;   // EVP_DecodeBlock keeps them as zeros
    out.resize(static_cast<size_t>(n) - pad);
    return out;
}

WebhookKey parse_webhook_secret(std::string_view text) {
    constexpr std::string_view prefix = "whsec_";
    if (text.substr(0, prefix.size()) == prefix) text.remove_prefix(prefix.size());
    WebhookKey k;
    try {
        k.bytes = base64_decode(text);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("webhook secret: ") + e.what() + "; use whsec_<base64>");
    }
    // The Standard Webhooks specification asks for 24 to 64 random bytes.
    if (k.bytes.size() < 24)
        throw std::invalid_argument("webhook secret: " + std::to_string(k.bytes.size()) +
                                    " bytes is too short (at least 24 random bytes: whsec_$(openssl rand -base64 32))");
    return k;
}

std::vector<WebhookKey> parse_webhook_secret_file(std::string_view content) {
    std::vector<WebhookKey> keys;
    std::istringstream lines{std::string(content)};
    std::string line;
    while (std::getline(lines, line)) {
        size_t b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos || line[b] == '#') continue;
        std::istringstream words(line);
        std::string w;
        while (words >> w) keys.push_back(parse_webhook_secret(w));
    }
    if (keys.empty()) throw std::invalid_argument("webhook secret: the file holds no secret");
    return keys;
}

std::string webhook_signature(const std::vector<WebhookKey>& keys, std::string_view id, int64_t timestamp,
                              std::string_view body) {
    std::string content;
    std::string ts = std::to_string(timestamp);
    content.reserve(id.size() + ts.size() + body.size() + 2);
    content.append(id).append(".").append(ts).append(".").append(body);
    std::string out;
    for (const auto& k : keys) {
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        if (!HMAC(EVP_sha256(), k.bytes.data(), static_cast<int>(k.bytes.size()),
                  reinterpret_cast<const unsigned char*>(content.data()), content.size(), mac, &len))
            throw std::runtime_error("HMAC-SHA256 failed (OpenSSL)");
        if (!out.empty()) out += ' ';
        out += "v1," + base64_encode(std::string_view(reinterpret_cast<const char*>(mac), len));
    }
    return out;
}

}  // namespace once::relay
