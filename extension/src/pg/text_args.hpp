// Text at the SQL boundary: reading text arguments and returning text results.
#pragma once

#include "../core/error.hpp"
#include "guard.hpp"

#include <string_view>

namespace once::pg {

// The bytes of a text value (detoasted; short or long varlena header).
std::string_view text_view(const text* t);

// A new text Datum holding s, in the current memory context.
Datum text_datum(std::string_view s);

// The error a NULL argument gets: its code, message and hint ("" for none). String literals:
// nothing is built unless the argument is NULL.
struct NullArgumentError {
    ErrorCode code;
    const char* message;
    const char* hint;
};

// Argument `arg` as detoasted text; a NULL throws Error(if_null.code, if_null.message, {},
// if_null.hint). Validating the value is the caller's (core/*: validate_topic, ...).
text* required_text_arg(FunctionCallInfo fcinfo, int arg, const NullArgumentError& if_null);

// required_text_arg, then validate(value) (a core/* check that throws once::Error).
text* validated_text_arg(FunctionCallInfo fcinfo, int arg, const NullArgumentError& if_null,
                         void (*validate)(std::string_view));

}  // namespace once::pg
