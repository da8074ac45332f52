#include "saga_json.hpp"

#include "error.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace once::saga {

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

namespace {

void dump_string(const std::string& s, std::string& out) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

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
        case Json::Type::string: dump_string(j.as_string(), out); break;
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
                dump_string(m.first, out);
                out += ':';
                dump_value(m.second, out);
            }
            out += '}';
            break;
        }
    }
}

constexpr int kMaxDepth = 200;

class Parser {
public:
    explicit Parser(std::string_view text) : s_(text) {}

    Json document() {
        Json v = value(0);
        skip_ws();
        if (pos_ != s_.size()) fail("unexpected text after the JSON value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& what) {
        throw Error(ErrorCode::invalid_json, "invalid JSON: " + what,
                    "At byte " + std::to_string(pos_) + ".");
    }

    void skip_ws() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }

    bool literal(std::string_view word) {
        if (s_.substr(pos_, word.size()) == word) { pos_ += word.size(); return true; }
        return false;
    }

    Json value(int depth) {
        if (depth > kMaxDepth) fail("nested too deeply");
        skip_ws();
        if (pos_ >= s_.size()) fail("unexpected end of input");
        char c = s_[pos_];
        if (c == '{') return object(depth);
        if (c == '[') return array(depth);
        if (c == '"') return Json::string(string());
        if (literal("null")) return Json::null();
        if (literal("true")) return Json::boolean(true);
        if (literal("false")) return Json::boolean(false);
        if (c == '-' || (c >= '0' && c <= '9')) return number();
        fail(std::string("unexpected character '") + c + "'");
    }

    Json object(int depth) {
        ++pos_;
        Json obj = Json::object();
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return obj; }
        for (;;) {
            skip_ws();
            if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a member name");
            std::string key = string();
            skip_ws();
            if (pos_ >= s_.size() || s_[pos_] != ':') fail("expected ':'");
            ++pos_;
            obj.set(key, value(depth + 1));
            skip_ws();
            if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
            if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return obj; }
            fail("expected ',' or '}'");
        }
    }

    Json array(int depth) {
        ++pos_;
        Json arr = Json::array();
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return arr; }
        for (;;) {
            arr.push(value(depth + 1));
            skip_ws();
            if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
            if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return arr; }
            fail("expected ',' or ']'");
        }
    }

    static void put_utf8(uint32_t cp, std::string& out) {
        if (cp < 0x80) out += static_cast<char>(cp);
        else if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) {
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
        if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            char h = s_[pos_++];
            v <<= 4;
            if (h >= '0' && h <= '9') v |= h - '0';
            else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
            else fail("bad \\u escape");
        }
        return v;
    }

    std::string string() {
        ++pos_;  // opening quote
        std::string out;
        for (;;) {
            if (pos_ >= s_.size()) fail("unterminated string");
            char c = s_[pos_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
            if (c != '\\') { out += c; continue; }
            if (pos_ >= s_.size()) fail("unterminated escape");
            char e = s_[pos_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp <= 0xDBFF) {
                        if (!literal("\\u")) fail("lone surrogate");
                        uint32_t lo = hex4();
                        if (lo < 0xDC00 || lo > 0xDFFF) fail("bad surrogate pair");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                        fail("lone surrogate");
                    }
                    put_utf8(cp, out);
                    break;
                }
                default: fail(std::string("bad escape '\\") + e + "'");
            }
        }
    }

    Json number() {
        size_t start = pos_;
        if (s_[pos_] == '-') ++pos_;
        if (pos_ >= s_.size() || !(s_[pos_] >= '0' && s_[pos_] <= '9')) fail("bad number");
        if (s_[pos_] == '0') ++pos_;
        else while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
        if (pos_ < s_.size() && s_[pos_] == '.') {
            ++pos_;
            if (pos_ >= s_.size() || !(s_[pos_] >= '0' && s_[pos_] <= '9')) fail("bad number");
            while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
        }
        if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            ++pos_;
            if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
            if (pos_ >= s_.size() || !(s_[pos_] >= '0' && s_[pos_] <= '9')) fail("bad number");
            while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
        }
        std::string digits(s_.substr(start, pos_ - start));
        return Json::number(std::strtod(digits.c_str(), nullptr));
    }

    std::string_view s_;
    size_t pos_ = 0;
};

}  // namespace

std::string Json::dump() const {
    std::string out;
    dump_value(*this, out);
    return out;
}

Json Json::parse(std::string_view text) { return Parser(text).document(); }

}  // namespace once::saga
