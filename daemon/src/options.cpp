#include "options.hpp"

#include <boost/program_options.hpp>

#include <sstream>
#include <stdexcept>

namespace po = boost::program_options;

namespace once::relay {

Options parse_options(int argc, const char* const argv[], std::string* help_text) {
    Options o;
    po::options_description desc("once-relay options");
    desc.add_options()
        ("help,h", po::bool_switch(&o.show_help), "show this help and exit")
        ("version", po::bool_switch(&o.show_version), "show the version and exit")
        ("db", po::value(&o.db), "libpq connection string of the database to relay from")
        ("sink", po::value(&o.sink), "where messages go: stdout:, http(s)://, nats://, postgresql://")
        ("name", po::value(&o.name)->default_value("once-relay"), "relay name");
    std::ostringstream help;
    help << "Usage: once-relay --db CONNINFO --sink URI [options]\n\n" << desc;
    if (help_text) *help_text = help.str();
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, desc), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        throw std::runtime_error(e.what());
    }
    return o;
}

}  // namespace once::relay
