// Small helpers for server-rendered HTML: escaping and form bodies (percent-encoding is
// percent_encoding.hpp).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace once::console {

std::string esc(const std::string& s);            // HTML text and attribute values
// "a=1&b=2&a=3" -> {a: [1, 3], b: [2]}
std::map<std::string, std::vector<std::string>> parse_form(const std::string& body);
bool is_uuid(const std::string& s);

}  // namespace once::console
