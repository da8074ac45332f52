#include "wal/lsn.hpp"

#include <cstdio>
#include <stdexcept>

namespace once::relay::wal {

std::string format_lsn(Lsn lsn) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%X/%X", static_cast<unsigned>(lsn >> 32), static_cast<unsigned>(lsn & 0xFFFFFFFFu));
    return buf;
}

namespace {

bool parse_hex32(std::string_view text, uint32_t& out) {
    if (text.empty() || text.size() > 8) return false;
    out = 0;
    for (char c : text) {
        int digit;
        if (c >= '0' && c <= '9') digit = c - '0';
        else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
        else return false;
        out = (out << 4) | static_cast<uint32_t>(digit);
    }
    return true;
}

}  // namespace

Lsn parse_lsn(std::string_view text) {
    size_t slash = text.find('/');
    uint32_t high = 0, low = 0;
    if (slash == std::string_view::npos || !parse_hex32(text.substr(0, slash), high) ||
        !parse_hex32(text.substr(slash + 1), low)) {
        throw std::invalid_argument("not a WAL position (LSN, like 16/B374D848): \"" + std::string(text) + "\"");
    }
    return (static_cast<Lsn>(high) << 32) | low;
}

}  // namespace once::relay::wal
