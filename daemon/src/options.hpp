// once-relay's settings: one option table feeds both the command line and the config file.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace once::relay {

struct Options {
    std::string db;        // libpq conninfo
    std::string sink;      // sink URI
    std::string name;      // relay name (claims, logs, inbox source)
    bool show_help = false;
    bool show_version = false;
};

// Parses argv (and --config FILE). Throws std::runtime_error with a user-facing message.
Options parse_options(int argc, const char* const argv[], std::string* help_text);

}  // namespace once::relay
