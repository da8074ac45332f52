#include "pq_text.hpp"

#include <cstring>

namespace once::relay {

std::string one_line(const char* s) {
    std::string out = s ? s : "";
    for (char& c : out) if (c == '\n') c = ' ';
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

std::string array_literal(const std::vector<std::string>& items) {
    std::string out = "{";
    for (size_t i = 0; i < items.size(); ++i) {
        if (i) out.push_back(',');
        out += items[i];
    }
    out.push_back('}');
    return out;
}

bool connection_lost_sqlstate(const char* code) {
    return code && (std::strncmp(code, "08", 2) == 0 || std::strncmp(code, "57P", 3) == 0 ||
                    std::strcmp(code, "25006") == 0);
}

}  // namespace once::relay
