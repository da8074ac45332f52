// JSON string quoting for the few JSON documents the relay writes itself (stdout lines).
#pragma once

#include <string>
#include <string_view>

namespace once::relay {

// "..." with ", \ and control characters escaped (UTF-8 passes through).
std::string json_quote(std::string_view s);

}  // namespace once::relay
