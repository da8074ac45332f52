#include "html.hpp"

#include "percent_encoding.hpp"

#include <cctype>

namespace once::console {

std::string esc(const std::string& s) {
    std::string out;
    out.reserve(s.size() + 16);
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out.push_back(c);
        }
    }
    return out;
}

std::map<std::string, std::vector<std::string>> parse_form(const std::string& body) {
    std::map<std::string, std::vector<std::string>> out;
    size_t pos = 0;
    while (pos <= body.size()) {
        size_t amp = body.find('&', pos);
        if (amp == std::string::npos) amp = body.size();
        std::string pair = body.substr(pos, amp - pos);
        if (!pair.empty()) {
            size_t eq = pair.find('=');
            std::string k = relay::percent_decode(pair.substr(0, eq));
            std::string v = eq == std::string::npos ? "" : relay::percent_decode(pair.substr(eq + 1));
            out[k].push_back(v);
        }
        pos = amp + 1;
    }
    return out;
}

bool is_uuid(const std::string& s) {
    if (s.size() != 36) return false;
    for (size_t i = 0; i < 36; ++i) {
        if (i == 8 || i == 13 || i == 18 || i == 23) { if (s[i] != '-') return false; }
        else if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
    }
    return true;
}

}  // namespace once::console
