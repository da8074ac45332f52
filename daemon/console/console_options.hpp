// once-console's settings: like once-relay's, one option table feeds the command line and the
// config file (INI "name = value"); the command line wins. Secrets never come from the
// command line: logins are checked against the --credentials file, and the database
// password (if any) belongs in the conninfo of the config file, a .pgpass file or PGPASSFILE.
#pragma once

#include "duration.hpp"

#include <string>
#include <vector>

namespace once::console {

using relay::Millis;

// One database the console serves: its name (in the URLs, /db/NAME/…, and the selector) and
// its libpq conninfo.
struct DatabaseOption {
    std::string name, conninfo;
    bool operator==(const DatabaseOption& o) const { return name == o.name && conninfo == o.conninfo; }
};

struct Options {
    std::string db;                       // libpq conninfo; the login needs once_console_admin
                                          // (or once_console_viewer alone for a read-only console)
    // Every database served, in order (the first is the one "/" shows): --db first (named by
    // its dbname), then each --database "NAME CONNINFO".
    std::vector<DatabaseOption> databases;
    std::string listen = "127.0.0.1:8086";  // host:port of the web server
    std::string metrics_listen;           // host:port of /metrics (db_metrics.hpp); empty: off
    std::string credentials;              // file of "name role secret-hash" lines
    std::string log_level = "info";
    std::string config;
    Millis session_ttl{8 * 3600 * 1000};  // a login lasts this long
    Millis statement_timeout{5000};       // per database statement of a page
    Millis connect_timeout{5000};
    Millis rate_interval{10000};          // how often the overview's send / ack rates are sampled
    int threads = 4;                      // request threads (each with its own connection)
    // What one client can hold (docs/console.md, "Limits"): connections in all, connections
    // from one address, the time to send a whole request; failed logins per client address
    // and per user name, refilled over the window.
    int max_connections = 256;
    int max_connections_per_address = 16;
    Millis request_timeout{10000};
    int login_failures = 10;
    Millis login_failure_window{10 * 60 * 1000};
    bool secure_cookie = false;           // add "Secure" to the cookie (behind an HTTPS proxy)
    bool check_config = false;
    bool hash_secret = false;             // read a secret on stdin, print its credentials hash
    bool show_help = false;
    bool show_version = false;
};

// A database's name: 1..63 of a-z, 0-9, '_' and '-'.
bool is_database_name(const std::string& s);
// "NAME CONNINFO" (the --database value) -> {NAME, CONNINFO}; throws std::runtime_error.
DatabaseOption parse_database_option(const std::string& value);

// Throws std::runtime_error with a user-facing message.
Options parse_options(int argc, const char* const argv[], std::string* help_text = nullptr);
void validate(const Options& o);

}  // namespace once::console
