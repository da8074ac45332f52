#include "wal/replication_frames.hpp"

#include "wal/wire_reader.hpp"

namespace once::relay::wal {

ReplicationFrame parse_replication_frame(std::string_view copy_data) {
    WireReader r(copy_data, "replication frame");
    char type = static_cast<char>(r.u8("the frame type"));
    if (type == 'w') {
        XLogData x;
        x.wal_start = r.u64("XLogData's WAL start");
        x.wal_end = r.u64("XLogData's WAL end");
        x.send_time = r.i64("XLogData's send time");
        x.data = r.rest();
        return x;
    }
    if (type == 'k') {
        PrimaryKeepalive k;
        k.wal_end = r.u64("the keepalive's WAL end");
        k.send_time = r.i64("the keepalive's send time");
        k.reply_requested = r.u8("the keepalive's reply flag") != 0;
        return k;
    }
    r.fail("unknown frame type " + std::to_string(static_cast<int>(static_cast<uint8_t>(type))));
}

namespace {

void put_u64(std::string& out, uint64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xFF));
}

}  // namespace

std::string encode_standby_status(const StandbyStatus& s) {
    std::string out;
    out.reserve(34);
    out.push_back('r');
    put_u64(out, s.written);
    put_u64(out, s.flushed);
    put_u64(out, s.applied);
    put_u64(out, static_cast<uint64_t>(s.client_time));
    out.push_back(s.reply_requested ? 1 : 0);
    return out;
}

}  // namespace once::relay::wal
