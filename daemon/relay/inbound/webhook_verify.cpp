#include "inbound/webhook_verify.hpp"

#include <openssl/crypto.h>

#include <string>

namespace once::relay {

const char* describe(WebhookCheck check) {
    switch (check) {
    case WebhookCheck::verified: return "verified";
    case WebhookCheck::missing_headers: return "missing webhook-id, webhook-timestamp or webhook-signature header";
    case WebhookCheck::bad_timestamp: return "webhook-timestamp is not a number of seconds";
    case WebhookCheck::timestamp_too_old: return "webhook-timestamp too old (outside the tolerance)";
    case WebhookCheck::timestamp_too_new: return "webhook-timestamp too new (outside the tolerance)";
    case WebhookCheck::no_matching_signature: return "no matching signature";
    }
    return "unknown";
}

namespace {

// "1700000000" -> seconds. The text is signed as it was sent, so it must be the number's one
// spelling (no sign, no leading zero, at most 18 digits): sinks/webhook_signature formats it.
bool parse_timestamp(std::string_view text, int64_t& out) {
    if (text.empty() || text.size() > 18 || (text.size() > 1 && text[0] == '0')) return false;
    int64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    out = v;
    return true;
}

}  // namespace

WebhookCheck verify_webhook(const std::vector<WebhookKey>& keys, std::string_view id, std::string_view timestamp,
                            std::string_view signatures, std::string_view body, int64_t now_unix_seconds,
                            std::chrono::seconds tolerance) {
    if (id.empty() || timestamp.empty() || signatures.empty()) return WebhookCheck::missing_headers;
    int64_t ts = 0;
    if (!parse_timestamp(timestamp, ts)) return WebhookCheck::bad_timestamp;
    if (ts < now_unix_seconds - tolerance.count()) return WebhookCheck::timestamp_too_old;
    if (ts > now_unix_seconds + tolerance.count()) return WebhookCheck::timestamp_too_new;
    std::vector<std::string> expected;
    expected.reserve(keys.size());
    for (const auto& k : keys) expected.push_back(webhook_signature({k}, id, ts, body));
    bool match = false;
    size_t pos = 0;
    while (pos < signatures.size()) {
        size_t end = signatures.find(' ', pos);
        if (end == std::string_view::npos) end = signatures.size();
        std::string_view candidate = signatures.substr(pos, end - pos);
        pos = end + 1;
        if (candidate.substr(0, 3) != "v1,") continue;
        // Every candidate is compared with every secret, without stopping at the first match,
        // and each comparison takes the same time whatever the bytes: the time of an answer
        // tells nothing about how close a forged signature came.
        for (const auto& e : expected)
            if (e.size() == candidate.size() && CRYPTO_memcmp(e.data(), candidate.data(), e.size()) == 0) match = true;
    }
    return match ? WebhookCheck::verified : WebhookCheck::no_matching_signature;
}

}  // namespace once::relay
