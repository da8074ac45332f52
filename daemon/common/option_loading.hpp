// What both daemons' option parsing shares: one boost::program_options table read from the
// command line and then from the --config file (INI "name = value", the same names without
// "--"; the command line wins), and the readers of the value types both use.
#pragma once

#include "duration.hpp"

#include <boost/program_options.hpp>

#include <string>

namespace once::relay {

// The command line. Throws std::runtime_error with boost's message (unknown option, bad value).
boost::program_options::variables_map read_command_line(int argc, const char* const argv[],
                                                        const boost::program_options::options_description& desc);

// Adds --config FILE, when `vm` names one, to `vm` and runs the table's checks
// (po::notify). Returns the file's name ("" without one). Throws std::runtime_error: the file
// is unreadable, or boost's message followed by " (command line or FILE)".
std::string load_config_file(boost::program_options::variables_map& vm,
                             const boost::program_options::options_description& desc);

// on|true|yes|1 or off|false|no|0; anything else throws std::runtime_error naming --`name`.
bool parse_on_off(const std::string& name, const std::string& value);

// The duration option `name` (200ms, 30s, 5min, 8h), or `fallback` when it is not set. Throws
// std::runtime_error naming --`name`.
Millis duration_option(const boost::program_options::variables_map& vm, const char* name, Millis fallback);

}  // namespace once::relay
