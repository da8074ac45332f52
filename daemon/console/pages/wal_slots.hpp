// The WAL transport's view: once.transport as the console's session sees it and this
// database's logical replication slots (streamed or not, the walsender, wal_status, WAL
// retained and not yet confirmed, lag), with the slots that need attention marked. The
// overview uses the same model for its WAL section and its backlog wording.
#pragma once

#include "db.hpp"

#include <optional>
#include <string>
#include <vector>

namespace once::console {

struct WalSlotRow {
    std::string slot, plugin;
    bool active = false;
    std::optional<std::string> walsender_pid;   // none: no walsender streams it
    std::string wal_status;                     // reserved, extended, unreserved, lost ("" when NULL)
    std::string confirmed_lsn;
    std::optional<long long> retained_bytes, unconfirmed_bytes;   // none: the slot has no position
    std::optional<double> lag_seconds;          // none: PostgreSQL has no lag measured for it
    std::string client;                         // the streaming client's address, "" when none
    std::string last_reply;                     // "" when none
};

struct WalModel {
    std::string transport;   // once.transport: "table", "wal", or "" when the session has no value
    std::vector<WalSlotRow> slots;
};

WalModel load_wal(Tx& tx);

// Why a slot needs attention, "" when it does not: no walsender streams it, or PostgreSQL
// gave up (wal_status unreserved or lost: the WAL it needs is or will be removed).
std::string wal_slot_attention(const WalSlotRow& s);
// "1 byte", "512 bytes", "3.4 kB", "12.0 MB", "1.5 GB" (powers of 1024).
std::string bytes_text(long long bytes);
// With the WAL transport: where its messages wait (the slots, by name, and their WAL not yet
// confirmed), not in the table; "" with the table transport.
std::string wal_backlog_note(const WalModel& m);
// The overview's line when the outbox table has no pending message: with the WAL transport
// the messages wait in the slots, not in the table, and the line says which.
std::string empty_outbox_text(const WalModel& m);
// The slots table (id wal-slots), with the attention column.
std::string render_wal_slots_table(const WalModel& m);
// The page /wal.
std::string render_wal(const WalModel& m);

}  // namespace once::console
