#include "pages/format.hpp"

#include "html.hpp"
#include "percent_encoding.hpp"

namespace once::console {

std::string capped(const std::string& v) { return std::stol(v) >= kCap ? std::to_string(kCap) + "+" : v; }

std::string count_cell(const std::string& v) {
    if (v.empty()) return "<td class=num>0</td>";
    return "<td class=num>" + capped(v) + "</td>";
}

std::string ts(const std::string& t) { return t.size() > 19 ? t.substr(0, 19) : t; }

std::string age_text(double seconds) {
    if (seconds < 0) seconds = 0;
    if (seconds < 120) return std::to_string(static_cast<long>(seconds)) + " s";
    if (seconds < 7200) return std::to_string(static_cast<long>(seconds / 60)) + " min";
    if (seconds < 172800) return std::to_string(static_cast<long>(seconds / 3600)) + " h";
    return std::to_string(static_cast<long>(seconds / 86400)) + " d";
}

std::string status_badge(const std::string& st) {
    return "<span class=\"badge st-" + esc(st) + "\">" + esc(st) + "</span>";
}

std::string saga_href(const std::string& name, const std::string& id) {
    return "/saga?name=" + relay::percent_encode(name) + "&id=" + relay::percent_encode(id);
}

}  // namespace once::console
