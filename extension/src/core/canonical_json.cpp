#include "canonical_json.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace once {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Appends a number (valid JSON number syntax) as an exact decimal: digits with the decimal
// point placed by the exponent, so 1.50, 15e-1 and 1.5 all become 1.5. Exponents are bounded
// to keep the output small; beyond that the normalised scientific form is used.
}  // namespace

void append_canonical_number(std::string& out, std::string_view number) {
    size_t pos = 0;
    auto peek = [&] { return pos < number.size() ? number[pos] : '\0'; };
    bool negative = false;
    if (peek() == '-') { negative = true; ++pos; }
    std::string digits;  // all significant digits, integer then fraction
    long long point = 0; // position of the decimal point within digits
    while (is_digit(peek())) { digits += number[pos++]; ++point; }
    if (peek() == '.') {
        ++pos;
        while (is_digit(peek())) digits += number[pos++];
    }
    long long exponent = 0;
    if (peek() == 'e' || peek() == 'E') {
        ++pos;
        bool exp_negative = false;
        if (peek() == '+' || peek() == '-') { exp_negative = peek() == '-'; ++pos; }
        while (is_digit(peek())) {
            if (exponent < 100000000) exponent = exponent * 10 + (number[pos] - '0');
            ++pos;
        }
        if (exp_negative) exponent = -exponent;
    }
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

namespace {

void append_canonical(std::string& out, const Json& j) {
    switch (j.type()) {
        case Json::Type::object: {
            // Sorted by the UTF-8 bytes of the keys (std::string compares as unsigned char);
            // Json::parse has already kept only the last value of a duplicated key.
            std::vector<const Json::Member*> members;
            members.reserve(j.members().size());
            for (const auto& m : j.members()) members.push_back(&m);
            std::sort(members.begin(), members.end(),
                      [](const Json::Member* a, const Json::Member* b) { return a->first < b->first; });
            out += '{';
            for (size_t i = 0; i < members.size(); ++i) {
                if (i > 0) out += ',';
                append_json_string(out, members[i]->first);
                out += ':';
                append_canonical(out, members[i]->second);
            }
            out += '}';
            break;
        }
        case Json::Type::array: {
            out += '[';
            for (size_t i = 0; i < j.items().size(); ++i) {
                if (i > 0) out += ',';
                append_canonical(out, j.items()[i]);
            }
            out += ']';
            break;
        }
        case Json::Type::number:
            // canonical_json serialises parsed documents only: every number has its source text.
            append_canonical_number(out, j.number_text());
            break;
        case Json::Type::string: append_json_string(out, j.as_string()); break;
        case Json::Type::boolean: out += j.as_bool() ? "true" : "false"; break;
        case Json::Type::null: out += "null"; break;
    }
}

}  // namespace

std::string canonical_json(std::string_view json_text) {
    std::string out;
    append_canonical(out, Json::parse(json_text));
    return out;
}

}  // namespace once
