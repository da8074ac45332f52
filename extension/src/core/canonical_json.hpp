// Canonical JSON: one byte string per JSON value, whatever its spelling. Request fingerprints
// hash this form, so a retry that reorders keys, adds whitespace, writes 1.0 for 1 or \u00e9
// for é is still recognised as the same request.
//
// Rules (in the spirit of RFC 8785):
//  - no insignificant whitespace;
//  - object members sorted by the UTF-8 bytes of their keys; a duplicated key keeps its last
//    value (as PostgreSQL's jsonb does);
//  - strings: escapes decoded, re-escaped minimally (", \, and control characters as \uXXXX
//    except \b \f \n \r \t); other characters as raw UTF-8; invalid UTF-8 is an error;
//  - numbers: exact decimal, no exponent noise: sign, integer digits without leading zeros,
//    fraction without trailing zeros, "-0" becomes "0"; 1e2 == 100 == 100.0.
//
// Parsing (and so what is rejected: invalid UTF-8, \u0000, nesting beyond kMaxJsonDepth) is
// Json::parse's; this file only serialises the parsed document in canonical form.
#pragma once

#include "json.hpp"

#include <string>
#include <string_view>

namespace once {

// Throws once::Error(ErrorCode::invalid_json) for text that is not a single JSON value.
std::string canonical_json(std::string_view json_text);

// Appends the canonical form of a number given in valid JSON number syntax (e.g. PostgreSQL's
// numeric_out): the building block for serialisers that walk another representation, like
// the request fingerprint that walks jsonb (extension/src/pg/idempotency/fingerprint.cpp).
void append_canonical_number(std::string& out, std::string_view number);

}  // namespace once
