#include "pages/database_prefix.hpp"

namespace once::console {

std::optional<DatabasePath> split_database_prefix(const std::string& path) {
    static const std::string head = "/db/";
    if (path.compare(0, head.size(), head) != 0) return std::nullopt;
    auto slash = path.find('/', head.size());
    std::string name = path.substr(head.size(), slash == std::string::npos ? std::string::npos : slash - head.size());
    if (name.empty()) return std::nullopt;
    return DatabasePath{name, slash == std::string::npos ? "/" : path.substr(slash)};
}

std::string database_prefix(const std::string& name) { return "/db/" + name; }

std::string prefix_links(const std::string& html, const std::string& prefix) {
    std::string out;
    out.reserve(html.size() + 64 * prefix.size());
    size_t pos = 0;
    while (pos < html.size()) {
        size_t href = html.find("href=\"/", pos), action = html.find("action=\"/", pos);
        size_t at = std::min(href, action);
        if (at == std::string::npos) break;
        size_t path = html.find('"', at) + 1;   // the "/" of the link's path
        out.append(html, pos, path - pos);
        if (html.compare(path, 4, "/db/") != 0) out += prefix;
        pos = path;
    }
    out.append(html, pos, std::string::npos);
    return out;
}

std::string prefix_location(const std::string& location, const std::string& prefix) {
    if (location.empty() || location[0] != '/' || location.compare(0, 4, "/db/") == 0) return location;
    if (location == "/login" || location.compare(0, 7, "/login?") == 0) return location;
    return prefix + location;
}

}  // namespace once::console
