// The WAL transport's reader: one logical replication connection (replication=database) that
// streams a pgoutput slot and yields the pg_once outbox messages in commit order
// (outbox_stream_decoder), answers the server's keepalives, and reports back the flush
// position the caller sets. It confirms nothing by itself: the slot's confirmed_flush_lsn only
// moves to what confirm() was given, so a message is never skipped on restart before the
// caller says it is settled (acknowledged by the sink or written back to the outbox table).
//
// Reading never blocks: socket() joins the caller's poll(), read_available() takes whatever
// has arrived. wait_readable() is a blocking convenience for tools and tests.
#pragma once

#include "duration.hpp"
#include "wal/lsn.hpp"
#include "wal/outbox_stream_decoder.hpp"
#include "wal/wal_reader.hpp"

#include <libpq-fe.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace once::relay::wal {

struct ReplicationStreamOptions {
    std::string conninfo;
    std::string slot;
    std::string publication;
    Lsn start = 0;  // 0/0: from the slot's confirmed position
    std::string application_name = "once-relay wal";
    // Set: every pg_once message must end with its tag (wal/message_tag.hpp).
    std::optional<std::string> message_key;
    Millis connect_timeout{10'000};
    // A status update at least this often, so the server's wal_sender_timeout (60 s by
    // default) never ends a stream that is merely quiet.
    Millis status_interval{10'000};
};

// A connection or protocol failure; the message carries libpq's, never the conninfo.
class ReplicationStreamError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class ReplicationStream final : public WalReader {
public:
    explicit ReplicationStream(ReplicationStreamOptions options);
    ~ReplicationStream();
    ReplicationStream(const ReplicationStream&) = delete;
    ReplicationStream& operator=(const ReplicationStream&) = delete;

    // Connects and starts streaming (blocking, bounded by connect_timeout).
    void open();
    // WalReader: opens with `message_key` (replacing the options').
    void open(const std::optional<std::string>& message_key) override {
        options_.message_key = message_key;
        open();
    }
    bool is_open() const override { return conn_ != nullptr; }
    int socket() const override;

    // Decodes every complete frame that has arrived and appends its events; answers
    // keepalives that ask for a reply and sends the periodic status update. Returns false
    // when the server ended the stream (the connection is then closed). Throws
    // ReplicationStreamError (connection lost) or ProtocolError (a frame it cannot read).
    bool read_available(std::vector<WalEvent>& events) override;

    // Blocks until the socket is readable or `timeout` passes; true if readable.
    bool wait_readable(Millis timeout) const;

    // Sets the flush position reported to the server: every transaction whose commit record
    // lies below it is done with. Never moves backwards; sent with the next status update.
    void confirm(Lsn flushed) override;
    Lsn confirmed() const { return confirmed_; }

    // Sends a status update now (write = received, flush = apply = confirmed). With
    // reply_requested the server answers at once with a keepalive, which updates
    // idle_position().
    void send_status(bool reply_requested = false) override;

    // The highest WAL position received (XLogData or keepalive).
    Lsn received() const { return received_; }

    // The WAL end of the latest keepalive that arrived outside a transaction (0 if none): the
    // server has decoded and sent everything below it. A caller with nothing unsettled may
    // confirm it, so an idle slot does not hold WAL that other transactions wrote.
    Lsn idle_position() const override { return idle_position_; }

    // Sends the last status update, ends the stream and closes the connection.
    void close() override;

private:
    void handle_frame(std::string_view frame, std::vector<WalEvent>& events);
    void flush_output();
    [[noreturn]] void fail(const std::string& what);

    ReplicationStreamOptions options_;
    PGconn* conn_ = nullptr;
    OutboxStreamDecoder decoder_;
    Lsn received_ = 0;
    Lsn confirmed_ = 0;
    Lsn idle_position_ = 0;
    std::chrono::steady_clock::time_point last_status_{};
};

}  // namespace once::relay::wal
