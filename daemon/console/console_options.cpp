#include "console_options.hpp"

#include "option_loading.hpp"

#include <boost/program_options.hpp>
#include <libpq-fe.h>

#include <sstream>
#include <stdexcept>

namespace po = boost::program_options;

namespace once::console {

namespace {

po::options_description option_table() {
    po::options_description desc("once-console options (also valid in the --config file as name = value)");
    desc.add_options()
        ("help,h", "show this help and exit")
        ("version", "show the version and exit")
        ("check-config", "validate the configuration, read the credentials, reach the database, then exit")
        ("hash-secret", "read a password or token on stdin and print the hash for the credentials file")
        ("config", po::value<std::string>(), "INI file with any of these options; the command line wins")
        ("db", po::value<std::string>(), "libpq connection string of the database; its role needs once_console_admin "
                                          "(or once_console_viewer for a read-only console)")
        ("database", po::value<std::vector<std::string>>()->composing(),
         "\"NAME CONNINFO\": one more database to serve (repeat it, or one line each in the config file), "
         "shown at /db/NAME/; NAME is 1..63 of a-z, 0-9, _ and -")
        ("listen", po::value<std::string>(), "host:port to serve on (default 127.0.0.1:8086)")
        ("metrics-listen", po::value<std::string>(), "host:port serving /metrics, the database's view of relays and "
                                                      "outbox for Prometheus, without authentication (default off)")
        ("credentials", po::value<std::string>(), "file of console users: one \"name role hash\" line each, "
                                                   "role viewer or admin, hash from --hash-secret")
        ("session-ttl", po::value<std::string>(), "how long a login lasts (default 8h)")
        ("statement-timeout", po::value<std::string>(), "bound for each database statement of a page (default 5s)")
        ("rate-interval", po::value<std::string>(), "sample the outbox's send / ack counters this often for the overview's charts (default 10s; 60 samples are kept)")
        ("connect-timeout", po::value<std::string>(), "bound for opening a database connection (default 5s)")
        ("threads", po::value<int>(), "request threads, each with its own database connection, 1..64 (default 4)")
        ("max-connections", po::value<int>(), "connections served at once, 2..10000 (default 256)")
        ("max-connections-per-address", po::value<int>(), "connections from one client address, 1..less than "
                                                          "max-connections (default 16)")
        ("request-timeout", po::value<std::string>(), "a request must arrive whole (headers and body) within this "
                                                      "time, or its connection is closed (default 10s)")
        ("login-failures", po::value<int>(), "failed logins allowed per client address and per user name before "
                                             "logins are refused (HTTP 429), 1..1000 (default 10)")
        ("login-failure-window", po::value<std::string>(), "the failed-login allowance refills over this time "
                                                           "(default 10min)")
        ("secure-cookie", po::value<std::string>(), "on|off: mark the session cookie Secure (when served "
                                                     "through an HTTPS proxy; default off)")
        ("log-level", po::value<std::string>(), "trace, debug, info, warn, error or off (default info)");
    return desc;
}

// --db's name: the conninfo's dbname, or "default" when it names none (or does not parse: libpq
// says why when the console connects).
std::string database_name_of(const std::string& conninfo) {
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
    if (err) PQfreemem(err);
    if (!opts) return "default";
    std::string name = "default";
    for (auto* o = opts; o->keyword; ++o)
        if (std::string(o->keyword) == "dbname" && o->val && *o->val) name = o->val;
    PQconninfoFree(opts);
    if (!is_database_name(name))
        throw std::runtime_error("--db: the database \"" + name + "\" needs a name of a-z, 0-9, _ and - in the URLs: "
                                 "give it as --database \"NAME CONNINFO\"");
    return name;
}

}  // namespace

bool is_database_name(const std::string& s) {
    return !s.empty() && s.size() <= 63 && s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
}

DatabaseOption parse_database_option(const std::string& value) {
    auto start = value.find_first_not_of(" \t");
    auto space = value.find_first_of(" \t", start == std::string::npos ? 0 : start);
    std::string name = start == std::string::npos ? "" : value.substr(start, space == std::string::npos ? std::string::npos : space - start);
    std::string conninfo = space == std::string::npos ? "" : value.substr(space);
    auto cs = conninfo.find_first_not_of(" \t");
    conninfo = cs == std::string::npos ? "" : conninfo.substr(cs);
    if (!is_database_name(name))
        throw std::runtime_error("--database \"" + name + "\": the name must be 1..63 of a-z, 0-9, _ and - "
                                 "(the value is \"NAME CONNINFO\")");
    if (conninfo.empty())
        throw std::runtime_error("--database " + name + ": the connection string is missing (the value is \"NAME CONNINFO\")");
    return {name, conninfo};
}

Options parse_options(int argc, const char* const argv[], std::string* help_text) {
    Options o;
    auto desc = option_table();
    if (help_text) {
        std::ostringstream help;
        help << "Usage: once-console --db CONNINFO [--database \"NAME CONNINFO\"...] --credentials FILE [options]\n"
                "A web console for pg_once: topics, dead letters, blocked keys, sagas, actions.\n\n"
             << desc << "\nDurations take a unit: 200ms, 30s, 5min, 8h.\n";
        *help_text = help.str();
    }
    po::variables_map vm = relay::read_command_line(argc, argv, desc);
    if (vm.count("help")) { o.show_help = true; return o; }
    if (vm.count("version")) { o.show_version = true; return o; }
    if (vm.count("hash-secret")) { o.hash_secret = true; return o; }
    o.config = relay::load_config_file(vm, desc);
    o.check_config = vm.count("check-config") > 0;
    auto str = [&](const char* n, std::string& dst) { if (vm.count(n)) dst = vm[n].as<std::string>(); };
    str("db", o.db);
    if (!o.db.empty()) o.databases.push_back({database_name_of(o.db), o.db});
    if (vm.count("database"))
        for (auto& v : vm["database"].as<std::vector<std::string>>()) o.databases.push_back(parse_database_option(v));
    str("listen", o.listen);
    str("metrics-listen", o.metrics_listen);
    str("credentials", o.credentials);
    str("log-level", o.log_level);
    if (vm.count("threads")) o.threads = vm["threads"].as<int>();
    if (vm.count("max-connections")) o.max_connections = vm["max-connections"].as<int>();
    if (vm.count("max-connections-per-address")) o.max_connections_per_address = vm["max-connections-per-address"].as<int>();
    if (vm.count("login-failures")) o.login_failures = vm["login-failures"].as<int>();
    o.request_timeout = relay::duration_option(vm, "request-timeout", o.request_timeout);
    o.login_failure_window = relay::duration_option(vm, "login-failure-window", o.login_failure_window);
    if (vm.count("secure-cookie")) o.secure_cookie = relay::parse_on_off("secure-cookie", vm["secure-cookie"].as<std::string>());
    o.session_ttl = relay::duration_option(vm, "session-ttl", o.session_ttl);
    o.statement_timeout = relay::duration_option(vm, "statement-timeout", o.statement_timeout);
    o.rate_interval = relay::duration_option(vm, "rate-interval", o.rate_interval);
    o.connect_timeout = relay::duration_option(vm, "connect-timeout", o.connect_timeout);
    validate(o);
    return o;
}

void validate(const Options& o) {
    auto bad = [](const std::string& m) { return std::runtime_error(m); };
    if (o.databases.empty())
        throw bad("--db (or --database) is required: the libpq connection string of the database");
    for (size_t i = 0; i < o.databases.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (o.databases[i].name == o.databases[j].name)
                throw bad("two databases are named \"" + o.databases[i].name + "\": give each --database its own name");
    if (o.credentials.empty()) throw bad("--credentials is required: the file of console users (see --hash-secret)");
    if (o.threads < 1 || o.threads > 64) throw bad("--threads " + std::to_string(o.threads) + " is out of range 1..64");
    if (o.max_connections < 2 || o.max_connections > 10000)
        throw bad("--max-connections " + std::to_string(o.max_connections) + " is out of range 2..10000");
    // One address must not be able to take every connection.
    if (o.max_connections_per_address < 1 || o.max_connections_per_address >= o.max_connections)
        throw bad("--max-connections-per-address " + std::to_string(o.max_connections_per_address) +
                  " is out of range 1.." + std::to_string(o.max_connections - 1) + " (below --max-connections)");
    if (o.request_timeout < Millis(1000) || o.request_timeout > Millis(300000))
        throw bad("--request-timeout is out of range 1s..5min");
    if (o.login_failures < 1 || o.login_failures > 1000)
        throw bad("--login-failures " + std::to_string(o.login_failures) + " is out of range 1..1000");
    if (o.login_failure_window < Millis(1000) || o.login_failure_window > Millis(24 * 3600 * 1000))
        throw bad("--login-failure-window is out of range 1s..24h");
    if (o.session_ttl < Millis(60000)) throw bad("--session-ttl is shorter than 1min");
    if (o.statement_timeout < Millis(100)) throw bad("--statement-timeout is shorter than 100ms");
    if (o.rate_interval < Millis(1000)) throw bad("--rate-interval is shorter than 1s");
    if (o.connect_timeout < Millis(1000)) throw bad("--connect-timeout is shorter than 1s");
    static const char* levels[] = {"trace", "debug", "info", "warn", "error", "off"};
    bool level_ok = false;
    for (auto* l : levels) level_ok |= (o.log_level == l);
    if (!level_ok) throw bad("--log-level \"" + o.log_level + "\": use trace, debug, info, warn, error or off");
    auto check_address = [&](const char* option, const std::string& address, const char* example) {
        auto colon = address.rfind(':');
        if (colon == std::string::npos || colon == 0)
            throw bad(std::string(option) + " \"" + address + "\": use host:port, e.g. " + example);
        std::string port = address.substr(colon + 1);
        if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stol(port) > 65535)
            throw bad(std::string(option) + " \"" + address + "\": the port must be a number 0..65535");
    };
    check_address("--listen", o.listen, "127.0.0.1:8086");
    if (!o.metrics_listen.empty()) check_address("--metrics-listen", o.metrics_listen, "127.0.0.1:9188");
}

}  // namespace once::console
