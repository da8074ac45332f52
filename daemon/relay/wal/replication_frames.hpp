// The CopyData frames of a replication stream (PostgreSQL docs, "Streaming Replication
// Protocol"; the same layout from 9.4 through 18):
//   from the server: XLogData 'w' (WAL start, WAL end, send time, then one output plugin
//                    message) and the primary keepalive 'k' (WAL end, send time,
//                    reply-requested)
//   to the server:   the standby status update 'r' (write, flush and apply positions, client
//                    time, reply-requested)
// Times are microseconds since the PostgreSQL epoch, 2000-01-01 00:00 UTC.
#pragma once

#include "wal/lsn.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace once::relay::wal {

// Microseconds between the Unix epoch and the PostgreSQL epoch (2000-01-01).
inline constexpr int64_t kPgEpochOffsetUs = 946'684'800'000'000;

struct XLogData {
    Lsn wal_start = 0;      // for logical decoding: the position of the decoded record
    Lsn wal_end = 0;
    int64_t send_time = 0;  // PostgreSQL epoch, microseconds
    std::string_view data;  // one pgoutput message; points into the frame
};

struct PrimaryKeepalive {
    Lsn wal_end = 0;        // for a logical walsender: how far it has decoded and sent
    int64_t send_time = 0;
    bool reply_requested = false;
};

using ReplicationFrame = std::variant<XLogData, PrimaryKeepalive>;

// Parses one CopyData payload from the server; throws ProtocolError on a truncated frame or an
// unknown frame type (the protocol has no other server frames in COPY BOTH mode).
ReplicationFrame parse_replication_frame(std::string_view copy_data);

struct StandbyStatus {
    Lsn written = 0;   // received
    Lsn flushed = 0;   // the slot's confirmed_flush_lsn follows this one
    Lsn applied = 0;
    int64_t client_time = 0;  // PostgreSQL epoch, microseconds
    bool reply_requested = false;
};

// The 34 bytes of a standby status update ('r').
std::string encode_standby_status(const StandbyStatus& status);

}  // namespace once::relay::wal
