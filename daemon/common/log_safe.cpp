#include "log_safe.hpp"

namespace once::relay {

namespace {

void append_hex(std::string& out, unsigned char byte) {
    static const char kDigits[] = "0123456789abcdef";
    out += "\\x";
    out += kDigits[byte >> 4];
    out += kDigits[byte & 0xf];
}

// The length of the valid UTF-8 sequence that starts at text[i], or 0 when it is not one
// (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short).
size_t utf8_length(std::string_view text, size_t i) {
    auto at = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    unsigned char b = at(i);
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;   // the allowed range of the second byte
    if (b >= 0xc2 && b <= 0xdf) n = 2;
    else if (b >= 0xe0 && b <= 0xef) {
        n = 3;
        if (b == 0xe0) lo = 0xa0;
        if (b == 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
        n = 4;
        if (b == 0xf0) lo = 0x90;
        if (b == 0xf4) hi = 0x8f;
    } else {
        return 0;
    }
    if (i + n > text.size()) return 0;
    if (at(i + 1) < lo || at(i + 1) > hi) return 0;
    for (size_t k = 2; k < n; ++k)
        if (at(i + k) < 0x80 || at(i + k) > 0xbf) return 0;
    return n;
}

}  // namespace

std::string log_safe(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        auto b = static_cast<unsigned char>(text[i]);
        if (b < 0x80) {
            if (b == '\n') out += "\\n";
            else if (b == '\r') out += "\\r";
            else if (b == '\t') out += "\\t";
            else if (b == '\\') out += "\\\\";
            else if (b < 0x20 || b == 0x7f) append_hex(out, b);
            else out += static_cast<char>(b);
            ++i;
            continue;
        }
        size_t n = utf8_length(text, i);
        if (n == 0) {
            append_hex(out, b);
            ++i;
        } else if (n == 2 && b == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
            append_hex(out, b);   // a C1 control
            append_hex(out, static_cast<unsigned char>(text[i + 1]));
            i += 2;
        } else {
            out.append(text.substr(i, n));
            i += n;
        }
    }
    return out;
}

}  // namespace once::relay
