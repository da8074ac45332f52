// once-console entry point: parse options, refuse root, read the credentials, check the
// database, serve until SIGTERM/SIGINT.
#include "auth.hpp"
#include "console_options.hpp"
#include "daemon_logger.hpp"
#include "log_safe.hpp"
#include "db.hpp"
#include "metrics_listener.hpp"
#include "server.hpp"
#include "systemd_notify.hpp"

#include <spdlog/spdlog.h>
#include <termios.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

namespace {

int fail(const std::string& msg, int code = 1) {
    std::fprintf(stderr, "once-console: %s\n", once::relay::log_safe(msg).c_str());
    return code;
}

// --hash-secret: one line from stdin (without echo on a terminal).
int print_hash() {
    bool tty = isatty(STDIN_FILENO);
    termios old{};
    if (tty) {
        std::fprintf(stderr, "password or token: ");
        tcgetattr(STDIN_FILENO, &old);
        termios quiet = old;
        quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
        tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
    }
    std::string secret;
    std::getline(std::cin, secret);
    if (tty) { tcsetattr(STDIN_FILENO, TCSANOW, &old); std::fprintf(stderr, "\n"); }
    if (secret.size() < 8) return fail("the secret must have at least 8 characters");
    std::printf("%s\n", once::console::hash_secret(secret).c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace once::console;
    Options options;
    std::string help;
    try {
        options = parse_options(argc, argv, &help);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "once-console: %s\nTry once-console --help.\n", once::relay::log_safe(e.what()).c_str());
        return 2;
    }
    if (options.show_help) { std::fputs(help.c_str(), stdout); return 0; }
    if (options.show_version) { std::printf("once-console %s\n", ONCE_VERSION); return 0; }
    if (options.hash_secret) return print_hash();
    if (geteuid() == 0)
        return fail("refusing to run as root: run it as an unprivileged user (the systemd unit uses DynamicUser=yes)");
    // Block the stop signals before any thread exists; the main thread waits for them.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    try {
        once::relay::install_daemon_logger("once-console", options.log_level);

        auto users = load_credentials(options.credentials);
        for (auto& d : options.databases) {
            // Each database is reachable and its login may take the console's roles.
            DbConfig db{d.conninfo, options.connect_timeout, options.statement_timeout};
            Tx tx(db, Role::viewer, true);
            auto r = tx.query("SELECT pg_catalog.pg_has_role(session_user, 'once_console_admin', 'MEMBER')");
            if (r.get(0, 0) != "t")
                spdlog::warn("database {}: the login is not a member of once_console_admin: admins can look but not act", d.name);
        }
        reset_thread_connection();
        if (options.check_config) {
            std::printf("once-console: configuration OK (%zu user(s), %zu database(s) reachable)\n", users.size(),
                        options.databases.size());
            return 0;
        }
        Console console(options, std::move(users));
        HttpServer server(options, console);
        spdlog::info("once-console {} serving http://{}:{}/", ONCE_VERSION,
                     options.listen.substr(0, options.listen.rfind(':')), server.port());
        std::unique_ptr<MetricsListener> metrics;
        if (!options.metrics_listen.empty()) {
            std::vector<DbConfig> dbs;
            for (auto& d : options.databases)
                dbs.push_back(DbConfig{d.conninfo, options.connect_timeout, options.statement_timeout});
            metrics = std::make_unique<MetricsListener>(options.metrics_listen, std::move(dbs));
            spdlog::info("metrics on http://{}:{}/metrics", options.metrics_listen.substr(0, options.metrics_listen.rfind(':')),
                         metrics->port());
        }
        once::relay::SystemdNotifier notifier;
        notifier.ready();
        int sig = 0;
        sigwait(&stop, &sig);
        notifier.stopping();
        spdlog::info("signal {}: stopping", sig);
        return 0;
    } catch (const std::exception& e) {
        return fail(e.what());
    }
}
