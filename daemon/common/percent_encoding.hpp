// Percent-encoding (RFC 3986) for query strings: the relay's sink URIs (uri.hpp) and
// once-console's links and form bodies.
#pragma once

#include <string>

namespace once::relay {

// '+' is a space; a '%' not followed by two hex digits stays as it is.
std::string percent_decode(const std::string& s);
// Everything but letters, digits and -_.~ as %XX (upper-case hex).
std::string percent_encode(const std::string& s);

}  // namespace once::relay
