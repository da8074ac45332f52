#include "pg/common/text_args.hpp"

namespace once::pg {

text* required_text_arg(FunctionCallInfo fcinfo, int arg, const NullArgumentError& if_null) {
    if (PG_ARGISNULL(arg)) throw Error(if_null.code, if_null.message, {}, if_null.hint);
    return PG_GETARG_TEXT_PP(arg);
}

text* validated_text_arg(FunctionCallInfo fcinfo, int arg, const NullArgumentError& if_null,
                         void (*validate)(std::string_view)) {
    text* value = required_text_arg(fcinfo, arg, if_null);
    validate(text_view(value));
    return value;
}

}  // namespace once::pg
