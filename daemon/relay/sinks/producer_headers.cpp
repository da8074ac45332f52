#include "sinks/producer_headers.hpp"

#include "core/message_headers.hpp"
#include "sinks/http_status.hpp"

#include <spdlog/spdlog.h>

#include <exception>

namespace once::relay {

std::string loggable_header_name(std::string_view name) {
    static const char* hex = "0123456789abcdef";
    constexpr size_t kMax = 64;
    std::string out;
    for (size_t i = 0; i < name.size() && i < kMax; ++i) {
        auto c = static_cast<unsigned char>(name[i]);
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
            out += "\\x";
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    if (name.size() > kMax) out += "...";
    return out;
}

std::vector<std::pair<std::string, std::string>> producer_headers(const Message& m) {
    std::vector<std::string> unparsable;
    std::vector<std::pair<std::string, std::string>> parsed;
    try {
        parsed = message_headers(m.headers, &unparsable);
    } catch (const std::exception& ex) {
        spdlog::warn("message {}: {} (sent without them)", m.id, ex.what());
        return {};
    }
    // message_headers already skips names that are not tokens and values with CR/LF.
    for (const auto& name : unparsable)
        spdlog::warn("message {}: header \"{}\" not sent: it is not a valid header (name or value)", m.id,
                     loggable_header_name(name));
    HeaderSelection sel = select_headers(parsed);
    for (const auto& r : sel.refused)
        spdlog::warn("message {}: header \"{}\" not sent: {}", m.id, loggable_header_name(r.name), r.reason);
    return std::move(sel.kept);
}

}  // namespace once::relay
