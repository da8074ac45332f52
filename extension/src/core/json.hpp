// The JSON document model of the extension: one strict RFC 8259 parser and a small DOM.
// The saga engine reads definitions and (de)serialises its state with it, and canonical_json
// (request fingerprints) serialises it in canonical form.
//
// Parsing rules (shared by every user):
//  - exactly one JSON value, surrounded by optional whitespace;
//  - strings must be valid UTF-8 (no overlongs, no surrogates); escapes are decoded, \u
//    surrogate pairs must pair up, and \u0000 is rejected (PostgreSQL text cannot hold it);
//  - nesting deeper than kMaxJsonDepth is rejected rather than risking the stack;
//  - objects keep their members in first-seen order; a duplicated key keeps its last value
//    (as PostgreSQL's jsonb does);
//  - numbers keep their exact source spelling (number_text) as well as a double.
// Every error is once::Error(ErrorCode::invalid_json) naming the byte offset.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace once {

// Maximum nesting depth accepted by Json::parse.
constexpr int kMaxJsonDepth = 1000;

class Json {
public:
    enum class Type { null, boolean, number, string, array, object };
    using Member = std::pair<std::string, Json>;

    Json() = default;
    static Json null() { return Json(); }
    static Json boolean(bool b) { Json j; j.type_ = Type::boolean; j.bool_ = b; return j; }
    static Json number(double d) { Json j; j.type_ = Type::number; j.number_ = d; return j; }
    static Json string(std::string s) { Json j; j.type_ = Type::string; j.string_ = std::move(s); return j; }
    static Json array() { Json j; j.type_ = Type::array; return j; }
    static Json object() { Json j; j.type_ = Type::object; return j; }

    Type type() const { return type_; }
    bool is_null() const { return type_ == Type::null; }
    bool is_bool() const { return type_ == Type::boolean; }
    bool is_number() const { return type_ == Type::number; }
    bool is_string() const { return type_ == Type::string; }
    bool is_array() const { return type_ == Type::array; }
    bool is_object() const { return type_ == Type::object; }

    bool as_bool() const { return bool_; }
    double as_number() const { return number_; }
    // The number exactly as written in the parsed text (e.g. "1.50e2"); empty for numbers
    // made with number(double).
    const std::string& number_text() const { return number_text_; }
    const std::string& as_string() const { return string_; }
    const std::vector<Json>& items() const { return items_; }
    const std::vector<Member>& members() const { return members_; }

    // Object access: nullptr when absent (or when this is not an object).
    const Json* find(std::string_view key) const;
    // Object building: replaces an existing member.
    Json& set(const std::string& key, Json value);
    Json& push(Json value);

    // Compact JSON in member order; numbers from their double (integers without a fraction).
    std::string dump() const;

    static Json parse(std::string_view text);

    static const char* type_name(Type t);

private:
    friend class JsonParser;

    Type type_ = Type::null;
    bool bool_ = false;
    double number_ = 0;
    std::string string_;
    std::string number_text_;
    std::vector<Json> items_;
    std::vector<Member> members_;
};

// Appends s as a JSON string literal with minimal escaping: ", \ and control characters
// (\b \f \n \r \t by name, others as \u00xx); everything else as raw UTF-8.
void append_json_string(std::string& out, std::string_view s);

}  // namespace once
