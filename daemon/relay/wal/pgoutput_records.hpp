// The pgoutput messages inside XLogData that the WAL transport reads (PostgreSQL docs,
// "Logical Replication Message Formats"; proto_version 1 with streaming off, unchanged from
// 15 through 18):
//   Begin   'B'  final LSN (the commit record's position), commit time, xid
//   Commit  'C'  flags, commit LSN, end LSN of the transaction, commit time
//   Message 'M'  flags (bit 0: transactional), LSN, prefix (C string), content length, content
// (A Message carries an xid first only inside a streamed transaction, protocol 2 and later;
// the relay asks for protocol 1, where transactions arrive whole after their commit.)
// Every other message (Relation, Type, Origin, Insert, ...) is skipped by type: each XLogData
// carries exactly one message, so skipping needs no knowledge of its layout.
#pragma once

#include "wal/lsn.hpp"

#include <cstdint>
#include <string_view>
#include <variant>

namespace once::relay::wal {

struct PgoutputBegin {
    Lsn final_lsn = 0;
    int64_t commit_time = 0;  // PostgreSQL epoch, microseconds
    uint32_t xid = 0;
};

struct PgoutputCommit {
    Lsn commit_lsn = 0;
    Lsn end_lsn = 0;          // confirming this position skips the transaction on the next start
    int64_t commit_time = 0;
};

struct PgoutputMessage {
    bool transactional = false;
    Lsn lsn = 0;
    std::string_view prefix;   // points into the frame
    std::string_view content;  // points into the frame
};

struct PgoutputOther {
    char type = 0;
};

using PgoutputRecord = std::variant<PgoutputBegin, PgoutputCommit, PgoutputMessage, PgoutputOther>;

// Parses one pgoutput message (XLogData's data); throws ProtocolError when it is empty or a
// Begin, Commit or Message is truncated (a Message also when bytes follow its content).
PgoutputRecord parse_pgoutput(std::string_view data);

}  // namespace once::relay::wal
