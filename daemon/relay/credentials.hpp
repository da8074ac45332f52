// Secrets the relay reads from files: systemd credentials ($CREDENTIALS_DIRECTORY, filled by
// LoadCredential= in the unit) and files named by options. And the warnings for secrets
// given where every local user can read them (the command line, shown by ps).
#pragma once

#include "options.hpp"

#include <optional>
#include <string>
#include <vector>

namespace once::relay {

// $CREDENTIALS_DIRECTORY/<name> when the variable is set and that file exists.
std::optional<std::string> credential_path(const std::string& name);

// The file's content. Throws std::runtime_error naming the file (never its content); warns
// when other users may read it.
std::string read_secret_file(const std::string& path, const std::string& what);

// One warning per secret given on the command line (a password in --db, a password or NATS
// token in --sink's URL), naming the setting and where the secret belongs instead. The
// secret itself is never part of the text.
std::vector<std::string> command_line_secret_warnings(const Options& o);

}  // namespace once::relay
