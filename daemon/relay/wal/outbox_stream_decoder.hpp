// Turns the pgoutput messages of a replication stream into what the WAL transport acts on:
// the pg_once outbox messages, each with the commit position of its transaction, and the end
// of every transaction (the position the slot may be confirmed up to once all of that
// transaction's messages are settled). Pure logic: replication_stream feeds it from libpq, the
// tests feed it hand-built messages.
//
// Transactions arrive whole and in commit order (proto_version 1, no streaming): Begin, its
// messages, Commit. Messages with another prefix, and every other pgoutput message, are
// skipped. A "pg_once" message that is not transactional, or whose content does not decode,
// cannot be an outbox message of once.send (which emits transactional, well-formed ones):
// it is reported as malformed, for the caller to log and count, and does not stop the stream.
// An authentic message of another format version is a newer extension's (core/wal_message.hpp):
// it is reported as NewerFormatEvent, which the caller must not pass.
#pragma once

#include "core/wal_message.hpp"
#include "wal/lsn.hpp"
#include "wal/message_tag.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace once::relay::wal {

struct OutboxMessageEvent {
    Lsn commit_lsn = 0;   // the transaction's commit record: the message's place in the order
    Lsn message_lsn = 0;
    once::WalMessage message;
    int64_t commit_time = 0;  // the transaction's commit time (its Begin), PostgreSQL epoch, microseconds
    uint32_t xid = 0;         // the transaction's id (its Begin): whether it is visible yet (commit_visibility.hpp)
};

struct MalformedMessageEvent {
    Lsn commit_lsn = 0;   // 0 for a non-transactional message (it belongs to no transaction)
    Lsn message_lsn = 0;
    std::string error;
    bool unauthentic = false;   // its tag did not verify (wal/message_tag.hpp)
};

// A pg_once message of a format version this relay does not read (a newer extension's), whose
// tag verified (or, without a tag, any): the stream must not pass it, or the message is lost.
// The caller stops reading before it and confirms nothing past it.
struct NewerFormatEvent {
    Lsn commit_lsn = 0;
    Lsn message_lsn = 0;
    int version = 0;
    std::string error;
};

struct TransactionEndEvent {
    Lsn commit_lsn = 0;
    Lsn end_lsn = 0;          // confirm this once the transaction's messages are settled
    int64_t commit_time = 0;  // PostgreSQL epoch, microseconds
    size_t outbox_messages = 0;
};

using WalEvent = std::variant<OutboxMessageEvent, MalformedMessageEvent, NewerFormatEvent, TransactionEndEvent>;

class OutboxStreamDecoder {
public:
    OutboxStreamDecoder() = default;
    // With a tag, every pg_once message must end with its tag (wal/message_tag.hpp) computed
    // for its origin: the stream's cluster and database, given here, and the xid of the
    // transaction's Begin. One that does not is reported as malformed and unauthentic, never
    // decoded; so is one longer than once.send writes (kWalMessageMaxContentBytes), from its
    // declared length, before its tag is computed.
    OutboxStreamDecoder(std::optional<WalMessageTag> tag, uint64_t system_identifier, uint32_t database_oid)
        : tag_(std::move(tag)), system_identifier_(system_identifier), database_oid_(database_oid) {}

    // Feeds one pgoutput message (an XLogData's data); appends its events. Throws
    // ProtocolError on a malformed pgoutput message or one out of place (a Commit without a
    // Begin, a Begin inside a transaction, a transactional Message outside one).
    void feed(std::string_view pgoutput_message, std::vector<WalEvent>& events);

    bool in_transaction() const { return in_transaction_; }

private:
    std::optional<WalMessageTag> tag_;
    uint64_t system_identifier_ = 0;
    uint32_t database_oid_ = 0;
    bool in_transaction_ = false;
    Lsn final_lsn_ = 0;
    int64_t commit_time_ = 0;
    uint32_t xid_ = 0;
    size_t messages_in_transaction_ = 0;
};

}  // namespace once::relay::wal
