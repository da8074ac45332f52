#include "wal/start_replication_command.hpp"

#include <stdexcept>

namespace once::relay::wal {

bool is_valid_replication_name(std::string_view name) {
    if (name.empty() || name.size() > 63) return false;
    for (char c : name) {
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return true;
}

std::string start_replication_command(std::string_view slot, std::string_view publication, Lsn start) {
    for (auto [what, name] : {std::pair{"replication slot", slot}, std::pair{"publication", publication}}) {
        if (!is_valid_replication_name(name)) {
            throw std::invalid_argument(std::string(what) + " name \"" + std::string(name) +
                                        "\" is not 1-63 lower-case letters, digits or underscores");
        }
    }
    return "START_REPLICATION SLOT " + std::string(slot) + " LOGICAL " + format_lsn(start) +
           " (proto_version '1', publication_names '" + std::string(publication) + "', messages 'true')";
}

}  // namespace once::relay::wal
