#include "key_validation.hpp"

#include <string>

namespace once {

void validate_name(ErrorCode code, std::string_view what, std::string_view value) {
    const std::string name(what);
    if (value.empty())
        throw Error(code, name + " must not be empty",
                    {}, "Send a non-empty " + name + " of at most 255 bytes.");
    if (value.size() > kMaxKeyBytes)
        throw Error(code, name + " is too long",
                    name + " has " + std::to_string(value.size()) + " bytes; the limit is " +
                        std::to_string(kMaxKeyBytes) + ".",
                    "Use a shorter " + name + ", e.g. a UUID.");
    for (size_t i = 0; i < value.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(value[i]);
        if (c < 0x20 || c == 0x7F)
            throw Error(code, name + " contains a control character",
                        "Byte " + std::to_string(i) + " is 0x" +
                            std::string(1, "0123456789abcdef"[c >> 4]) +
                            std::string(1, "0123456789abcdef"[c & 0xF]) + ".",
                        "Names are printed in logs and HTTP headers; use printable characters.");
    }
}

}  // namespace once
