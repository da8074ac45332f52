#include "json.hpp"

#include "error.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

namespace once {

const Json* Json::find(std::string_view key) const {
    if (type_ != Type::object) return nullptr;
    for (const auto& m : members_)
        if (m.first == key) return &m.second;
    return nullptr;
}

Json& Json::set(const std::string& key, Json value) {
    for (auto& m : members_)
        if (m.first == key) { m.second = std::move(value); return *this; }
    members_.emplace_back(key, std::move(value));
    return *this;
}

Json& Json::push(Json value) {
    items_.push_back(std::move(value));
    return *this;
}

const char* Json::type_name(Type t) {
    switch (t) {
        case Type::null: return "null";
        case Type::boolean: return "boolean";
        case Type::number: return "number";
        case Type::string: return "string";
        case Type::array: return "array";
        case Type::object: return "object";
    }
    return "?";
}

void append_json_string(std::string& out, std::string_view s) {
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

namespace {

void dump_value(const Json& j, std::string& out) {
    switch (j.type()) {
        case Json::Type::null: out += "null"; break;
        case Json::Type::boolean: out += j.as_bool() ? "true" : "false"; break;
        case Json::Type::number: {
            double d = j.as_number();
            if (!std::isfinite(d)) { out += "null"; break; }
            char buf[40];
            if (d == std::floor(d) && std::fabs(d) < 9.0e15)
                std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(d));
            else
                std::snprintf(buf, sizeof buf, "%.17g", d);
            out += buf;
            break;
        }
        case Json::Type::string: append_json_string(out, j.as_string()); break;
        case Json::Type::array: {
            out += '[';
            bool first = true;
            for (const auto& item : j.items()) {
                if (!first) out += ',';
                first = false;
                dump_value(item, out);
            }
            out += ']';
            break;
        }
        case Json::Type::object: {
            out += '{';
            bool first = true;
            for (const auto& m : j.members()) {
                if (!first) out += ',';
                first = false;
                append_json_string(out, m.first);
                out += ':';
                dump_value(m.second, out);
            }
            out += '}';
            break;
        }
    }
}

void append_utf8(std::string& out, uint32_t cp) {
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

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::string Json::dump() const {
    std::string out;
    dump_value(*this, out);
    return out;
}

class JsonParser {
public:
    explicit JsonParser(std::string_view text) : text_(text) {}

    Json document() {
        skip_ws();
        Json v = value(0);
        skip_ws();
        if (pos_ != text_.size()) fail("unexpected text after the JSON value");
        return v;
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

    Json value(int depth) {
        if (depth > kMaxJsonDepth) fail("nesting deeper than " + std::to_string(kMaxJsonDepth));
        switch (peek()) {
            case '{': return object(depth);
            case '[': return array(depth);
            case '"': return Json::string(string());
            case 't': expect_literal("true"); return Json::boolean(true);
            case 'f': expect_literal("false"); return Json::boolean(false);
            case 'n': expect_literal("null"); return Json::null();
            default: return number();
        }
    }

    Json object(int depth) {
        ++pos_;  // '{'
        Json obj = Json::object();
        skip_ws();
        if (peek() == '}') { ++pos_; return obj; }
        // Index of each key in obj.members_, so a duplicate replaces in O(1), not O(members).
        std::unordered_map<std::string, size_t> index;
        for (;;) {
            skip_ws();
            if (peek() != '"') fail("expected a string as object key");
            std::string key = string();
            skip_ws();
            if (peek() != ':') fail("expected ':' after object key");
            ++pos_;
            skip_ws();
            Json member = value(depth + 1);
            auto [it, added] = index.emplace(key, obj.members_.size());
            if (added) obj.members_.emplace_back(std::move(key), std::move(member));
            else obj.members_[it->second].second = std::move(member);
            skip_ws();
            if (peek() == ',') { ++pos_; continue; }
            if (peek() == '}') { ++pos_; return obj; }
            fail("expected ',' or '}' in object");
        }
    }

    Json array(int depth) {
        ++pos_;  // '['
        Json arr = Json::array();
        skip_ws();
        if (peek() == ']') { ++pos_; return arr; }
        for (;;) {
            skip_ws();
            arr.items_.push_back(value(depth + 1));
            skip_ws();
            if (peek() == ',') { ++pos_; continue; }
            if (peek() == ']') { ++pos_; return arr; }
            fail("expected ',' or ']' in array");
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

    // -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
    Json number() {
        const size_t start = pos_;
        if (peek() == '-') ++pos_;
        if (!is_digit(peek())) fail("expected a JSON value");
        if (peek() == '0') ++pos_;
        else while (is_digit(peek())) ++pos_;
        if (peek() == '.') {
            ++pos_;
            if (!is_digit(peek())) fail("expected digits after '.'");
            while (is_digit(peek())) ++pos_;
        }
        if (peek() == 'e' || peek() == 'E') {
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (!is_digit(peek())) fail("expected digits in exponent");
            while (is_digit(peek())) ++pos_;
        }
        Json n = Json::number(0);
        n.number_text_ = std::string(text_.substr(start, pos_ - start));
        n.number_ = std::strtod(n.number_text_.c_str(), nullptr);
        return n;
    }

    std::string_view text_;
    size_t pos_ = 0;
};

Json Json::parse(std::string_view text) { return JsonParser(text).document(); }

}  // namespace once
