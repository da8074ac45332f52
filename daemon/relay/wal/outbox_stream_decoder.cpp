#include "wal/outbox_stream_decoder.hpp"

#include "wal/pgoutput_records.hpp"
#include "wal/protocol_error.hpp"

namespace once::relay::wal {

namespace {

struct Visitor {
    bool& in_transaction;
    Lsn& final_lsn;
    int64_t& commit_time;
    uint32_t& xid;
    size_t& messages;
    const std::optional<WalMessageTag>& tag;
    uint64_t system_identifier;
    uint32_t database_oid;
    std::vector<WalEvent>& events;

    void operator()(const PgoutputBegin& b) {
        if (in_transaction) throw ProtocolError("pgoutput Begin at " + format_lsn(b.final_lsn) + " inside a transaction");
        in_transaction = true;
        final_lsn = b.final_lsn;
        commit_time = b.commit_time;
        xid = b.xid;
        messages = 0;
    }

    void operator()(const PgoutputCommit& c) {
        if (!in_transaction) throw ProtocolError("pgoutput Commit at " + format_lsn(c.commit_lsn) + " without a Begin");
        if (c.commit_lsn != final_lsn) {
            throw ProtocolError("pgoutput Commit at " + format_lsn(c.commit_lsn) + " ends the transaction begun for " +
                                format_lsn(final_lsn));
        }
        in_transaction = false;
        events.push_back(TransactionEndEvent{c.commit_lsn, c.end_lsn, c.commit_time, messages});
    }

    void operator()(const PgoutputMessage& m) {
        if (m.prefix != once::kWalMessagePrefix) return;
        if (!m.transactional) {
            events.push_back(MalformedMessageEvent{0, m.lsn, "a non-transactional pg_once message (once.send emits "
                                                             "transactional ones only)"});
            return;
        }
        if (!in_transaction) throw ProtocolError("pgoutput transactional Message at " + format_lsn(m.lsn) + " outside a transaction");
        // Longer than once.send writes: anyone's (pg_logical_emit_message), skipped by its
        // length alone, not hashed nor copied.
        if (m.content.size() > once::kWalMessageMaxContentBytes) {
            events.push_back(MalformedMessageEvent{final_lsn, m.lsn, std::to_string(m.content.size()) +
                                                                         " bytes, longer than once.send writes (not emitted by it)",
                                                   true});
            return;
        }
        // The content ends with its tag (core/wal_message.hpp): verified here, for this
        // transaction's origin, when the decoder has the key; split off by decode_wal_message
        // either way. Another transaction's message emitted again here does not verify.
        if (tag && !tag->verify(once::WalMessageOrigin{system_identifier, database_oid, xid}, m.content)) {
            events.push_back(MalformedMessageEvent{final_lsn, m.lsn,
                                                   "its tag does not verify for this transaction (not emitted by "
                                                   "once.send in it)",
                                                   true});
            return;
        }
        try {
            events.push_back(OutboxMessageEvent{final_lsn, m.lsn, once::decode_wal_message(m.content), commit_time, xid});
            ++messages;
        } catch (const once::WalMessageVersionError& e) {
            events.push_back(NewerFormatEvent{final_lsn, m.lsn, e.version(), e.what()});
        } catch (const once::WalMessageFormatError& e) {
            events.push_back(MalformedMessageEvent{final_lsn, m.lsn, e.what()});
        }
    }

    void operator()(const PgoutputOther&) {}
};

}  // namespace

void OutboxStreamDecoder::feed(std::string_view pgoutput_message, std::vector<WalEvent>& events) {
    std::visit(Visitor{in_transaction_, final_lsn_, commit_time_, xid_, messages_in_transaction_, tag_, system_identifier_,
                       database_oid_, events},
               parse_pgoutput(pgoutput_message));
}

}  // namespace once::relay::wal
