#include "wal/pgoutput_records.hpp"

#include "wal/wire_reader.hpp"

namespace once::relay::wal {

PgoutputRecord parse_pgoutput(std::string_view data) {
    WireReader r(data, "pgoutput message");
    char type = static_cast<char>(r.u8("the message type"));
    switch (type) {
    case 'B': {
        PgoutputBegin b;
        b.final_lsn = r.u64("Begin's final LSN");
        b.commit_time = r.i64("Begin's commit time");
        b.xid = r.u32("Begin's xid");
        return b;
    }
    case 'C': {
        PgoutputCommit c;
        r.u8("Commit's flags");
        c.commit_lsn = r.u64("Commit's commit LSN");
        c.end_lsn = r.u64("Commit's end LSN");
        c.commit_time = r.i64("Commit's commit time");
        return c;
    }
    case 'M': {
        PgoutputMessage m;
        m.transactional = (r.u8("Message's flags") & 1) != 0;
        m.lsn = r.u64("Message's LSN");
        m.prefix = r.c_string("Message's prefix");
        uint32_t length = r.u32("Message's content length");
        m.content = r.bytes(length, "Message's content");
        if (!r.rest().empty()) r.fail("bytes after a Message's content");
        return m;
    }
    default:
        return PgoutputOther{type};
    }
}

}  // namespace once::relay::wal
