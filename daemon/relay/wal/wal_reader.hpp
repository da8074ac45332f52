// What the relay's WAL stream session (claim/wal_stream_session.hpp) needs of the replication
// connection: ReplicationStream implements it with libpq, the unit tests with a fake.
#pragma once

#include "wal/lsn.hpp"
#include "wal/outbox_stream_decoder.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace once::relay::wal {

// open() throws this when the slot is streaming to another connection (SQLSTATE 55006,
// object_in_use): a slot serves one connection at a time, so another relay of the group
// streams it and this one stands by.
class SlotInUse : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class WalReader {
public:
    virtual ~WalReader() = default;
    // Connects and starts streaming from the slot's confirmed position; with `message_key`,
    // every pg_once message must carry its tag (wal/message_tag.hpp). Throws on failure:
    // SlotInUse when another connection streams the slot.
    virtual void open(const std::optional<std::string>& message_key) = 0;
    virtual bool is_open() const = 0;
    virtual int socket() const = 0;
    // Appends the events that have arrived; false when the server ended the stream. Throws
    // when the connection is lost or a frame cannot be read.
    virtual bool read_available(std::vector<WalEvent>& events) = 0;
    virtual void confirm(Lsn flushed) = 0;    // the flush position the next status update reports
    virtual void send_status(bool reply_requested = false) = 0;
    virtual Lsn idle_position() const = 0;    // see ReplicationStream::idle_position
    virtual void close() = 0;
};

}  // namespace once::relay::wal
