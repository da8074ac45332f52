#include "topic.hpp"

#include "error.hpp"

#include <string>

namespace once {
namespace {

bool token_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

// Checks the token structure shared by topics and patterns. Wildcards are allowed only
// when `pattern` is true.
void validate(std::string_view s, bool pattern) {
    const ErrorCode code = pattern ? ErrorCode::invalid_topic_pattern : ErrorCode::invalid_topic;
    const std::string what = pattern ? "topic pattern" : "topic";
    const std::string hint = "Use dot-separated tokens of letters, digits, '_' and '-'" +
                             std::string(pattern ? ", '*' for one token or a final '>' for the rest." : ".");
    if (s.empty()) throw Error(code, what + " must not be empty", {}, hint);
    if (s.size() > kMaxTopicBytes)
        throw Error(code, what + " is too long",
                    what + " has " + std::to_string(s.size()) + " bytes; the limit is 255.", hint);
    size_t start = 0;
    for (;;) {
        size_t end = s.find('.', start);
        std::string_view token = s.substr(start, end == std::string_view::npos ? s.npos : end - start);
        const bool last = end == std::string_view::npos;
        if (token.empty())
            throw Error(code, what + " has an empty token", "in \"" + std::string(s) + "\"", hint);
        if (pattern && token == "*") {
            // fine
        } else if (pattern && token == ">") {
            if (!last)
                throw Error(code, what + " has '>' before its last token",
                            "in \"" + std::string(s) + "\"", hint);
        } else {
            for (char c : token)
                if (!token_char(c))
                    throw Error(code, what + " contains a character outside [A-Za-z0-9_-.]",
                                "\"" + std::string(s) + "\" contains '" + std::string(1, c) + "'", hint);
        }
        if (last) break;
        start = end + 1;
    }
}

}  // namespace

void validate_topic(std::string_view topic) { validate(topic, false); }
void validate_topic_pattern(std::string_view pattern) { validate(pattern, true); }

bool is_literal_pattern(std::string_view pattern) {
    size_t start = 0;
    while (start <= pattern.size()) {
        size_t end = pattern.find('.', start);
        if (end == std::string_view::npos) end = pattern.size();
        std::string_view token = pattern.substr(start, end - start);
        if (token == "*" || token == ">") return false;
        start = end + 1;
    }
    return true;
}

bool topic_matches(std::string_view pattern, std::string_view topic) {
    size_t p = 0, t = 0;
    for (;;) {
        size_t pe = pattern.find('.', p);
        std::string_view ptok = pattern.substr(p, pe == pattern.npos ? pattern.npos : pe - p);
        if (ptok == ">") return t < topic.size();  // '>' needs at least one more token
        if (t >= topic.size()) return false;        // topic ran out of tokens
        size_t te = topic.find('.', t);
        std::string_view ttok = topic.substr(t, te == topic.npos ? topic.npos : te - t);
        if (ptok != "*" && ptok != ttok) return false;
        const bool plast = pe == pattern.npos, tlast = te == topic.npos;
        if (plast || tlast) return plast && tlast;
        p = pe + 1;
        t = te + 1;
    }
}

}  // namespace once
