// A small JSON document model for the saga engine: the definition parser reads a saga
// definition with it, and the state machine (de)serialises its state and decisions with it.
// Deliberately minimal (objects keep member order; numbers are doubles with their source
// spelling kept for integers); it is not a general-purpose JSON library.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace once::saga {

class Json {
public:
    enum class Type { null, boolean, number, string, array, object };

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
    const std::string& as_string() const { return string_; }
    const std::vector<Json>& items() const { return items_; }
    const std::vector<std::pair<std::string, Json>>& members() const { return members_; }

    // Object access: nullptr when absent (or when this is not an object).
    const Json* find(std::string_view key) const;
    // Object building: replaces an existing member.
    Json& set(const std::string& key, Json value);
    Json& push(Json value);

    std::string dump() const;

    // Throws once::Error(ErrorCode::invalid_json) on malformed text.
    static Json parse(std::string_view text);

    static const char* type_name(Type t);

private:
    Type type_ = Type::null;
    bool bool_ = false;
    double number_ = 0;
    std::string string_;
    std::vector<Json> items_;
    std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace once::saga
