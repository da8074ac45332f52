// once-relay entry point.
#include "options.hpp"

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
    std::string help;
    try {
        auto options = once::relay::parse_options(argc, argv, &help);
        if (options.show_help) { std::fputs(help.c_str(), stdout); return 0; }
        if (options.show_version) { std::printf("once-relay %s\n", ONCE_VERSION); return 0; }
        std::fputs("once-relay: not implemented yet\n", stderr);
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "once-relay: %s\nTry once-relay --help.\n", e.what());
        return 2;
    }
}
