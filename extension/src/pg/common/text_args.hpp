// Text at the SQL boundary: reading text arguments and returning text results.
#pragma once

#include "core/error.hpp"
#include "pg/common/convert.hpp"  // text_view, text_datum
#include "pg/common/guard.hpp"

#include <string_view>

namespace once::pg {

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
