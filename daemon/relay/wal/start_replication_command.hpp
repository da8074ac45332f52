// The START_REPLICATION command of the WAL transport. pgoutput with proto_version 1 (whole
// transactions after their commit, no streaming), the publication the relay's slot serves,
// and messages 'true' (logical decoding messages are what once.send emits in WAL mode).
#pragma once

#include "wal/lsn.hpp"

#include <string>
#include <string_view>

namespace once::relay::wal {

// True for a name PostgreSQL accepts as a replication slot name: 1-63 characters of lower-case
// letters, digits and underscores. Publication names are held to the same rule here, so
// neither ever needs quoting inside the command.
bool is_valid_replication_name(std::string_view name);

// START_REPLICATION SLOT <slot> LOGICAL <start> (proto_version '1', publication_names '<pub>',
// messages 'true'). start 0/0 resumes from the slot's confirmed position (the server starts
// from the later of the two). Throws std::invalid_argument naming a bad slot or publication.
std::string start_replication_command(std::string_view slot, std::string_view publication, Lsn start);

}  // namespace once::relay::wal
