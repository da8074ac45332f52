// Standard Webhooks signing (https://www.standardwebhooks.com): the HTTP sink's requests carry
// webhook-id, webhook-timestamp and webhook-signature: "v1,<base64 HMAC-SHA256>" over
// "<id>.<timestamp>.<body>", one signature per secret (space-separated) so a receiver can
// verify during a key rotation with either its old or its new secret.
// Secrets are "whsec_<base64>" (the prefix is optional, as in the reference libraries).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace once::relay {

struct WebhookKey {
    std::string bytes;   // the decoded secret
};

// "whsec_<base64>" or "<base64>" -> key. Throws std::invalid_argument with a message that
// never repeats the secret (not base64, shorter than 24 bytes).
WebhookKey parse_webhook_secret(std::string_view text);

// A secret file's content: one or more secrets separated by whitespace or new lines.
// Lines starting with '#' are comments. Throws std::invalid_argument (no secret, bad one).
std::vector<WebhookKey> parse_webhook_secret_file(std::string_view content);

// "v1,<base64>" for one key; signatures for several keys joined by one space.
std::string webhook_signature(const std::vector<WebhookKey>& keys, std::string_view id, int64_t timestamp,
                              std::string_view body);

std::string base64_encode(std::string_view bytes);
// Standard alphabet, padding required; throws std::invalid_argument otherwise.
std::string base64_decode(std::string_view text);

}  // namespace once::relay
