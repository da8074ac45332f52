// once-relay --create-wal-slot / --drop-wal-slot: the WAL transport's slot as one command.
// Create: the publication (no tables: pgoutput needs one, logical messages are not filtered by
// it) if missing, then the logical slot with pgoutput (on PostgreSQL 17 and later with
// failover => true, so a standby with sync_replication_slots keeps it). Drop: the slot (the
// publication stays: it has no tables and costs nothing). Needs a role with REPLICATION, and
// CREATE on the database for the publication.
#pragma once

#include "duration.hpp"

#include <stdexcept>
#include <string>

namespace once::relay::wal {

// A refusal with a message for the operator (slot exists, slot missing, permission denied).
class SlotAdminError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Returns what was done, for the operator. Throws SlotAdminError.
std::string create_wal_slot(const std::string& conninfo, const std::string& slot, const std::string& publication,
                            Millis connect_timeout);
std::string drop_wal_slot(const std::string& conninfo, const std::string& slot, Millis connect_timeout);

}  // namespace once::relay::wal
