#include "option_loading.hpp"

#include <fstream>
#include <stdexcept>

namespace po = boost::program_options;

namespace once::relay {

po::variables_map read_command_line(int argc, const char* const argv[], const po::options_description& desc) {
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, desc), vm);
    } catch (const po::error& e) {
        throw std::runtime_error(e.what());
    }
    return vm;
}

std::string load_config_file(po::variables_map& vm, const po::options_description& desc) {
    std::string config;
    try {
        if (vm.count("config")) {
            config = vm["config"].as<std::string>();
            std::ifstream in(config);
            if (!in) throw std::runtime_error("cannot read config file \"" + config + "\"");
            po::store(po::parse_config_file(in, desc, false), vm);
        }
        po::notify(vm);
    } catch (const po::error& e) {
        throw std::runtime_error(std::string(e.what()) + (config.empty() ? "" : " (command line or " + config + ")"));
    }
    return config;
}

bool parse_on_off(const std::string& name, const std::string& value) {
    if (value == "on" || value == "true" || value == "yes" || value == "1") return true;
    if (value == "off" || value == "false" || value == "no" || value == "0") return false;
    throw std::runtime_error("invalid value \"" + value + "\" for --" + name + ": use on or off");
}

Millis duration_option(const po::variables_map& vm, const char* name, Millis fallback) {
    if (!vm.count(name)) return fallback;
    try {
        return parse_duration(vm[name].as<std::string>());
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(std::string("--") + name + ": " + e.what());
    }
}

}  // namespace once::relay
