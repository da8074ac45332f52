// Named parameters for internal SQL; why: named_parameters.hpp.
#include "named_parameters.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace once {
namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::string numbered_parameters(const std::string& sql, const std::vector<std::string>& names) {
    for (size_t i = 0; i < names.size(); ++i)
        if (std::find(names.begin() + static_cast<long>(i) + 1, names.end(), names[i]) != names.end())
            throw std::invalid_argument("parameter :" + names[i] + " is named twice");
    std::vector<bool> used(names.size(), false);
    std::string out;
    out.reserve(sql.size());
    for (size_t i = 0; i < sql.size();) {
        const bool colon = sql[i] == ':';
        const bool cast = colon && ((i > 0 && sql[i - 1] == ':') || (i + 1 < sql.size() && sql[i + 1] == ':'));
        if (!colon || cast) {
            out += sql[i++];
            continue;
        }
        size_t end = i + 1;
        while (end < sql.size() && word_char(sql[end])) ++end;
        const std::string word = sql.substr(i + 1, end - i - 1);
        auto it = std::find(names.begin(), names.end(), word);
        if (word.empty() || it == names.end()) {
            out += sql[i++];
            continue;
        }
        const size_t index = static_cast<size_t>(it - names.begin());
        used[index] = true;
        out += "$" + std::to_string(index + 1);
        i = end;
    }
    for (size_t i = 0; i < names.size(); ++i)
        if (!used[i]) throw std::invalid_argument("parameter :" + names[i] + " does not occur in the statement");
    return out;
}

}  // namespace once
