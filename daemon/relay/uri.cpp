#include "uri.hpp"

#include "percent_encoding.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace once::relay {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

// Query parameters and conninfo keywords whose value is, or may be, a credential: passwords
// and tokens of any spelling (access_token, client_secret, api_key, apikey, sslpassword), the
// signatures of pre-signed URLs (sig, signature, X-Amz-Signature, X-Amz-Credential), OAuth
// codes and keys. Redacting a harmless parameter by mistake costs a log reader a value;
// missing a secret leaks it into the journal, so the rule errs wide.
bool secret_key(const std::string& k) {
    std::string l = lower(k);
    for (const char* exact : {"sig", "code", "pwd", "sas", "jwt", "nkey", "seed", "creds", "session"})
        if (l == exact) return true;
    for (const char* part : {"pass", "secret", "token", "key", "signature", "credential", "auth"})
        if (l.find(part) != std::string::npos) return true;
    return false;
}

// A path segment that looks like a credential: webhook URLs often carry their secret in the
// path (Slack /services/T../B../<24 characters>, Discord /api/webhooks/<id>/<68 characters>).
// Long segments that mix letters and digits are replaced; words and numeric ids stay, so the
// log still says which endpoint is meant.
bool secret_segment(const std::string& seg) {
    if (seg.size() >= 40) return true;
    if (seg.size() < 16) return false;
    bool letter = false, digit = false;
    for (unsigned char c : seg) {
        if (std::isalpha(c)) letter = true;
        else if (std::isdigit(c)) digit = true;
    }
    return letter && digit;
}

std::string redact_path(const std::string& path) {
    std::string out;
    size_t pos = 0;
    while (pos <= path.size()) {
        size_t slash = path.find('/', pos);
        std::string seg = path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
        out += secret_segment(seg) ? std::string("***") : seg;
        if (slash == std::string::npos) break;
        out += '/';
        pos = slash + 1;
    }
    return out;
}

}  // namespace

Uri parse_uri(const std::string& text) {
    Uri u;
    auto colon = text.find(':');
    if (colon == std::string::npos || colon == 0)
        throw std::invalid_argument("the sink is not a URI (expected scheme:..., e.g. stdout:, http://host/path)");
    u.scheme = lower(text.substr(0, colon));
    for (char c : u.scheme)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'))
            throw std::invalid_argument("the URI scheme \"" + u.scheme + "\" is invalid");
    std::string rest = text.substr(colon + 1);
    if (rest.rfind("//", 0) != 0) {   // opaque, e.g. "stdout:"
        auto q = rest.find('?');
        u.path = rest.substr(0, q);
        if (q != std::string::npos) rest = rest.substr(q);
        else rest.clear();
    } else {
        rest = rest.substr(2);
        auto end = rest.find_first_of("/?");
        std::string authority = rest.substr(0, end);
        rest = end == std::string::npos ? std::string() : rest.substr(end);
        auto at = authority.rfind('@');
        if (at != std::string::npos) {
            std::string userinfo = authority.substr(0, at);
            authority = authority.substr(at + 1);
            auto c = userinfo.find(':');
            u.user = percent_decode(userinfo.substr(0, c));
            if (c != std::string::npos) { u.password = percent_decode(userinfo.substr(c + 1)); u.has_password = true; }
        }
        u.hosts = authority;
        auto q = rest.find('?');
        u.path = rest.substr(0, q);
        rest = q == std::string::npos ? std::string() : rest.substr(q);
    }
    if (!rest.empty()) {   // "?a=b&c=d"
        std::string qs = rest.substr(1);
        auto hash = qs.find('#');
        if (hash != std::string::npos) qs = qs.substr(0, hash);
        size_t pos = 0;
        while (pos <= qs.size()) {
            auto amp = qs.find('&', pos);
            std::string item = qs.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
            if (!item.empty()) {
                auto eq = item.find('=');
                u.query.emplace_back(percent_decode(item.substr(0, eq)),
                                     eq == std::string::npos ? std::string() : percent_decode(item.substr(eq + 1)));
            }
            if (amp == std::string::npos) break;
            pos = amp + 1;
        }
    }
    return u;
}

std::string Uri::param(const std::string& key, const std::string& fallback) const {
    for (const auto& [k, v] : query)
        if (k == key) return v;
    return fallback;
}

namespace {
std::string build(const Uri& u, const std::vector<std::string>& drop, bool redact) {
    std::string out = u.scheme + ":";
    bool authority = !u.hosts.empty() || !u.user.empty() || u.scheme != "stdout";
    bool postgres = u.scheme == "postgresql" || u.scheme == "postgres";
    if (authority) {
        out += "//";
        if (!u.user.empty() || u.has_password) {
            // A user without a password is a token for NATS (nats://TOKEN@host) and for many
            // HTTP APIs (https://KEY@host); for libpq it is the role name, which stays.
            if (redact && !u.has_password && !postgres) out += "***";
            else out += percent_encode(u.user);
            if (u.has_password) out += ":" + (redact ? std::string("***") : percent_encode(u.password));
            out += "@";
        }
        out += u.hosts;
    }
    std::string path = u.path;
    if (redact) {
        // A fragment (#...) can carry a token too (OAuth's implicit grant does).
        auto hash = path.find('#');
        if (hash != std::string::npos) path = path.substr(0, hash) + "#***";
        path = redact_path(path);
    }
    out += path;
    char sep = '?';
    for (const auto& [k, v] : u.query) {
        if (std::find(drop.begin(), drop.end(), k) != drop.end()) continue;
        out += sep;
        sep = '&';
        out += percent_encode(k) + "=" + ((redact && secret_key(k)) ? std::string("***") : percent_encode(v));
    }
    return out;
}
}  // namespace

std::string Uri::without_params(const std::vector<std::string>& keys) const { return build(*this, keys, false); }
std::string Uri::redacted() const { return build(*this, {}, true); }

std::string redact_uri(const std::string& uri) {
    if (uri.find(':') == std::string::npos) return uri;
    try {
        return parse_uri(uri).redacted();
    } catch (...) {
        // Never echo something that failed to parse: it might hold "user:password@".
        auto scheme_end = uri.find("://");
        if (scheme_end == std::string::npos) return "<unparsable URI>";
        return uri.substr(0, scheme_end + 3) + "<unparsable URI>";
    }
}

std::string redact_conninfo(const std::string& conninfo) {
    if (conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0)
        return redact_uri(conninfo);
    // keyword = value pairs; values may be single-quoted with backslash escapes.
    std::string out;
    size_t i = 0, n = conninfo.size();
    while (i < n) {
        while (i < n && std::isspace(static_cast<unsigned char>(conninfo[i]))) out.push_back(conninfo[i++]);
        size_t ks = i;
        while (i < n && conninfo[i] != '=' && !std::isspace(static_cast<unsigned char>(conninfo[i]))) ++i;
        std::string key = conninfo.substr(ks, i - ks);
        out += key;
        while (i < n && std::isspace(static_cast<unsigned char>(conninfo[i]))) out.push_back(conninfo[i++]);
        if (i < n && conninfo[i] == '=') out.push_back(conninfo[i++]);
        while (i < n && std::isspace(static_cast<unsigned char>(conninfo[i]))) out.push_back(conninfo[i++]);
        std::string value;
        if (i < n && conninfo[i] == '\'') {
            value.push_back(conninfo[i++]);
            while (i < n && conninfo[i] != '\'') {
                if (conninfo[i] == '\\' && i + 1 < n) value.push_back(conninfo[i++]);
                value.push_back(conninfo[i++]);
            }
            if (i < n) value.push_back(conninfo[i++]);
        } else {
            while (i < n && !std::isspace(static_cast<unsigned char>(conninfo[i]))) value.push_back(conninfo[i++]);
        }
        out += secret_key(key) ? std::string("***") : value;
    }
    return out;
}

}  // namespace once::relay
