// Sink URIs and secret redaction. A sink URI is scheme://[user[:password]@]hosts[/path][?query];
// "stdout:" has no authority. Hosts may be a comma-separated list (nats://a:4222,b:4222).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace once::relay {

struct Uri {
    std::string scheme;      // lower-case: stdout, http, https, nats, postgresql, postgres
    std::string user;
    std::string password;
    bool has_password = false;
    std::string hosts;       // "host:port[,host:port...]", as written
    std::string path;        // starts with '/' or is empty
    std::vector<std::pair<std::string, std::string>> query;   // decoded, in order

    // Value of the first query parameter `key`, or `fallback`.
    std::string param(const std::string& key, const std::string& fallback = {}) const;
    // The URI rebuilt without the named query parameters (for handing on to libpq/libcurl).
    std::string without_params(const std::vector<std::string>& keys) const;
    // The URI for a log line: "***" in place of the password, of a user that stands alone
    // (a token, except for postgresql:// where it is the role), of secret-looking query
    // parameters (api_key, sig, token, code, secret, password, access_token, key,
    // signature, ...), of token-like path segments and of the fragment. Every URI the relay
    // prints (logs, errors, --check-config) goes through here or redact_conninfo.
    std::string redacted() const;
};

// Throws std::invalid_argument naming the problem.
Uri parse_uri(const std::string& text);

// Redacts the password in a libpq conninfo, either keyword=value form or a URI.
std::string redact_conninfo(const std::string& conninfo);
// Redacts secrets in any sink URI (falls back to a coarse redaction when it does not parse).
std::string redact_uri(const std::string& uri);

}  // namespace once::relay
