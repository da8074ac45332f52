#include "canonical_json.hpp"

#include "error.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

namespace once {
namespace {

class Canonicalizer {
public:
    explicit Canonicalizer(std::string_view text) : text_(text) {}

    std::string run() {
        std::string out;
        skip_ws();
        value(out, 0);
        skip_ws();
        if (pos_ != text_.size()) fail("unexpected text after the JSON value");
        return out;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(ErrorCode::invalid_json, "invalid JSON: " + what,
                    "at byte offset " + std::to_string(pos_));
    }

    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }

    void skip_ws() {
        while (!at_end()) {
            char c = text_[pos_];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') ++pos_;
            else break;
        }
    }

    void expect_literal(std::string_view lit) {
        if (text_.substr(pos_, lit.size()) != lit) fail("unknown literal");
        pos_ += lit.size();
    }

    void value(std::string& out, int depth) {
        if (depth > kMaxJsonDepth) fail("nesting deeper than " + std::to_string(kMaxJsonDepth));
        switch (peek()) {
            case '{': object(out, depth); break;
            case '[': array(out, depth); break;
            case '"': { std::string s = string(); append_string(out, s); break; }
            case 't': expect_literal("true"); out += "true"; break;
            case 'f': expect_literal("false"); out += "false"; break;
            case 'n': expect_literal("null"); out += "null"; break;
            default: number(out); break;
        }
    }

    void object(std::string& out, int depth) {
        ++pos_;  // '{'
        // std::map orders keys by their UTF-8 bytes; assignment keeps the last duplicate.
        std::map<std::string, std::string> members;
        skip_ws();
        if (peek() == '}') { ++pos_; out += "{}"; return; }
        for (;;) {
            skip_ws();
            if (peek() != '"') fail("expected a string as object key");
            std::string key = string();
            skip_ws();
            if (peek() != ':') fail("expected ':' after object key");
            ++pos_;
            skip_ws();
            std::string member;
            value(member, depth + 1);
            members[std::move(key)] = std::move(member);
            skip_ws();
            if (peek() == ',') { ++pos_; continue; }
            if (peek() == '}') { ++pos_; break; }
            fail("expected ',' or '}' in object");
        }
        out += '{';
        bool first = true;
        for (const auto& [key, member] : members) {
            if (!first) out += ',';
            first = false;
            append_string(out, key);
            out += ':';
            out += member;
        }
        out += '}';
    }

    void array(std::string& out, int depth) {
        ++pos_;  // '['
        out += '[';
        skip_ws();
        if (peek() == ']') { ++pos_; out += ']'; return; }
        for (bool first = true;; first = false) {
            if (!first) out += ',';
            skip_ws();
            value(out, depth + 1);
            skip_ws();
            if (peek() == ',') { ++pos_; continue; }
            if (peek() == ']') { ++pos_; break; }
            fail("expected ',' or ']' in array");
        }
        out += ']';
    }

    static void append_utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    uint32_t hex4() {
        if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            char c = text_[pos_++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= c - '0';
            else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
            else fail("bad hex digit in \\u escape");
        }
        return v;
    }

    // Copies one UTF-8 encoded character, validating it (no overlongs, no surrogates).
    void copy_utf8_char(std::string& out) {
        auto byte = [&](size_t i) { return static_cast<unsigned char>(text_[i]); };
        unsigned char c = byte(pos_);
        size_t len;
        uint32_t cp;
        if (c < 0x80) { out += static_cast<char>(c); ++pos_; return; }
        if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
        else fail("invalid UTF-8 lead byte");
        if (pos_ + len > text_.size()) fail("truncated UTF-8 sequence");
        for (size_t i = 1; i < len; ++i) {
            unsigned char cc = byte(pos_ + i);
            if ((cc & 0xC0) != 0x80) fail("invalid UTF-8 continuation byte");
            cp = (cp << 6) | (cc & 0x3F);
        }
        static const uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_for_len[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            fail("invalid UTF-8 code point");
        out.append(text_.substr(pos_, len));
        pos_ += len;
    }

    // Parses a JSON string and returns its decoded UTF-8 content.
    std::string string() {
        ++pos_;  // opening quote
        std::string s;
        for (;;) {
            if (at_end()) fail("unterminated string");
            char c = text_[pos_];
            if (c == '"') { ++pos_; return s; }
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
            if (c != '\\') { copy_utf8_char(s); continue; }
            ++pos_;
            if (at_end()) fail("unterminated escape");
            char e = text_[pos_++];
            switch (e) {
                case '"': s += '"'; break;
                case '\\': s += '\\'; break;
                case '/': s += '/'; break;
                case 'b': s += '\b'; break;
                case 'f': s += '\f'; break;
                case 'n': s += '\n'; break;
                case 'r': s += '\r'; break;
                case 't': s += '\t'; break;
                case 'u': {
                    uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp <= 0xDBFF) {
                        if (text_.substr(pos_, 2) != "\\u") fail("unpaired surrogate in \\u escape");
                        pos_ += 2;
                        uint32_t lo = hex4();
                        if (lo < 0xDC00 || lo > 0xDFFF) fail("unpaired surrogate in \\u escape");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                        fail("unpaired surrogate in \\u escape");
                    }
                    if (cp == 0) fail("\\u0000 is not allowed (PostgreSQL text cannot hold it)");
                    append_utf8(s, cp);
                    break;
                }
                default: fail("unknown escape");
            }
        }
    }

    static void append_string(std::string& out, const std::string& s) {
        static const char* hex = "0123456789abcdef";
        out += '"';
        for (unsigned char c : s) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                default:
                    if (c < 0x20) {
                        out += "\\u00";
                        out += hex[c >> 4];
                        out += hex[c & 0xF];
                    } else {
                        out += static_cast<char>(c);
                    }
            }
        }
        out += '"';
    }

    // Numbers are rewritten as an exact decimal: digits with the decimal point placed by the
    // exponent, so 1.50, 15e-1 and 1.5 all become 1.5. Exponents are bounded to keep the
    // output small; beyond that the normalised scientific form is used.
    void number(std::string& out) {
        size_t start = pos_;
        bool negative = false;
        if (peek() == '-') { negative = true; ++pos_; }
        if (!(peek() >= '0' && peek() <= '9')) fail("expected a JSON value");
        std::string digits;  // all significant digits, integer then fraction
        long long point = 0; // position of the decimal point within digits
        if (peek() == '0') {
            ++pos_;
            digits += '0';
            point = 1;
        } else {
            while (peek() >= '0' && peek() <= '9') { digits += text_[pos_++]; ++point; }
        }
        if (peek() == '.') {
            ++pos_;
            if (!(peek() >= '0' && peek() <= '9')) fail("expected digits after '.'");
            while (peek() >= '0' && peek() <= '9') digits += text_[pos_++];
        }
        long long exponent = 0;
        if (peek() == 'e' || peek() == 'E') {
            ++pos_;
            bool exp_negative = false;
            if (peek() == '+' || peek() == '-') { exp_negative = peek() == '-'; ++pos_; }
            if (!(peek() >= '0' && peek() <= '9')) fail("expected digits in exponent");
            while (peek() >= '0' && peek() <= '9') {
                if (exponent < 100000000) exponent = exponent * 10 + (text_[pos_] - '0');
                ++pos_;
            }
            if (exp_negative) exponent = -exponent;
        }
        (void)start;
        point += exponent;
        // Strip leading zeros (moving the point) and trailing zeros.
        size_t lead = digits.find_first_not_of('0');
        if (lead == std::string::npos) { out += '0'; return; }  // any zero, including -0
        digits.erase(0, lead);
        point -= static_cast<long long>(lead);
        digits.erase(digits.find_last_not_of('0') + 1);
        if (negative) out += '-';
        const long long n = static_cast<long long>(digits.size());
        if (point > 40 || point < -40) {
            // Scientific: d.ddd e(point-1)
            out += digits[0];
            if (n > 1) { out += '.'; out.append(digits, 1, std::string::npos); }
            out += 'e';
            out += std::to_string(point - 1);
        } else if (point <= 0) {
            out += "0.";
            out.append(static_cast<size_t>(-point), '0');
            out += digits;
        } else if (point >= n) {
            out += digits;
            out.append(static_cast<size_t>(point - n), '0');
        } else {
            out.append(digits, 0, static_cast<size_t>(point));
            out += '.';
            out.append(digits, static_cast<size_t>(point), std::string::npos);
        }
    }

    std::string_view text_;
    size_t pos_ = 0;
};

}  // namespace

std::string canonical_json(std::string_view json_text) {
    return Canonicalizer(json_text).run();
}

}  // namespace once
