#include "credentials.hpp"

#include "uri.hpp"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace once::relay {

std::optional<std::string> credential_path(const std::string& name) {
    const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
    if (!dir || !*dir) return std::nullopt;
    std::string path = std::string(dir) + "/" + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    return path;
}

std::string read_secret_file(const std::string& path, const std::string& what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read the " + what + " file \"" + path + "\"");
    std::ostringstream s;
    s << in.rdbuf();
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH))
        spdlog::warn("the {} file \"{}\" can be read by every user: chmod o-r it (or use a systemd credential)", what, path);
    return s.str();
}

std::vector<std::string> command_line_secret_warnings(const Options& o) {
    std::vector<std::string> out;
    if (o.db_from_command_line) {
        bool password = false;
        if (PQconninfoOption* opts = PQconninfoParse(o.db.c_str(), nullptr)) {
            for (PQconninfoOption* p = opts; p->keyword; ++p)
                if (std::string(p->keyword) == "password" && p->val && *p->val) password = true;
            PQconninfoFree(opts);
        }
        if (password)
            out.push_back("--db holds a password on the command line, where ps shows it to every local user: "
                          "put it in a pgpass file (PGPASSFILE) or a systemd credential (LoadCredential=pgpass:... "
                          "with PGPASSFILE=%d/pgpass, docs/relay-operations.md)");
    }
    if (o.sink_from_command_line) {
        try {
            Uri u = parse_uri(o.sink);
            if (u.has_password && (u.scheme == "postgresql" || u.scheme == "postgres"))
                out.push_back("--sink holds a password on the command line, where ps shows it to every local user: "
                              "put it in a pgpass file (PGPASSFILE) or a systemd credential (docs/relay-operations.md)");
            else if (u.has_password)
                out.push_back("--sink holds a password on the command line, where ps shows it to every local user: "
                              "put the sink in the config file (mode 0640) instead (docs/relay-operations.md)");
            else if (u.scheme == "nats" && !u.user.empty())
                out.push_back("--sink holds a NATS token on the command line, where ps shows it to every local user: "
                              "use --nats-token-file or a systemd credential (LoadCredential=nats-token:..., docs/relay-operations.md)");
        } catch (const std::invalid_argument&) {
            // validated (and reported) when the sink is made
        }
    }
    return out;
}

}  // namespace once::relay
