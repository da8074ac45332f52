#include "wal/replication_stream.hpp"

#include "pq_connect.hpp"
#include "wal/replication_frames.hpp"
#include "wal/start_replication_command.hpp"

#include <poll.h>

#include <charconv>
#include <cstdint>
#include <memory>
#include <string_view>

namespace once::relay::wal {

namespace {

int64_t pg_epoch_now_us() {
    auto since_unix = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    return since_unix.count() - kPgEpochOffsetUs;
}

std::string libpq_message(PGconn* conn) {
    std::string m = conn ? PQerrorMessage(conn) : "out of memory";
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    return m;
}

// A decimal unsigned 64-bit number, the whole of `text`.
bool parse_unsigned(const char* text, uint64_t& out) {
    std::string_view t(text);
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    return ec == std::errc() && end == t.data() + t.size() && !t.empty();
}

}  // namespace

ReplicationStream::ReplicationStream(ReplicationStreamOptions options) : options_(std::move(options)) {}

ReplicationStream::~ReplicationStream() {
    if (conn_) PQfinish(conn_);
}

void ReplicationStream::fail(const std::string& what) {
    std::string message = what + ": " + libpq_message(conn_);
    if (conn_) {
        PQfinish(conn_);
        conn_ = nullptr;
    }
    throw ReplicationStreamError(message);
}

void ReplicationStream::open() {
    if (conn_) return;
    // Checked before connecting: a bad name is a configuration error, not a connection one.
    std::string command = start_replication_command(options_.slot, options_.publication, options_.start);
    conn_ = relay_connect_replication(options_.conninfo, options_.application_name, options_.connect_timeout);
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) fail("replication connection failed");
    // The origin the messages' tags are bound to (wal/message_tag.hpp), from the server this
    // connection streams: its system identifier and the database the slot decodes.
    uint64_t system_identifier = 0;
    uint32_t database_oid = 0;
    {
        std::unique_ptr<PGresult, decltype(&PQclear)> id(PQexec(conn_, "IDENTIFY_SYSTEM"), PQclear);
        if (PQresultStatus(id.get()) != PGRES_TUPLES_OK || PQntuples(id.get()) != 1) fail("IDENTIFY_SYSTEM failed");
        if (!parse_unsigned(PQgetvalue(id.get(), 0, 0), system_identifier)) fail("IDENTIFY_SYSTEM: no system identifier");
        // (a logical replication connection runs plain SQL too)
        std::unique_ptr<PGresult, decltype(&PQclear)> db(
            PQexec(conn_, "SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname OPERATOR(pg_catalog.=) "
                          "pg_catalog.current_database()"),
            PQclear);
        if (PQresultStatus(db.get()) != PGRES_TUPLES_OK || PQntuples(db.get()) != 1) fail("reading the database's oid failed");
        uint64_t oid = 0;
        if (!parse_unsigned(PQgetvalue(db.get(), 0, 0), oid) || oid > UINT32_MAX) fail("reading the database's oid failed");
        database_oid = static_cast<uint32_t>(oid);
    }
    std::unique_ptr<PGresult, decltype(&PQclear)> res(PQexec(conn_, command.c_str()), PQclear);
    if (PQresultStatus(res.get()) != PGRES_COPY_BOTH) {
        const char* state = PQresultErrorField(res.get(), PG_DIAG_SQLSTATE);
        if (state && std::string_view(state) == "55006") {   // object_in_use: another relay streams it
            std::string message = libpq_message(conn_);
            PQfinish(conn_);
            conn_ = nullptr;
            throw SlotInUse(message);
        }
        fail("START_REPLICATION on slot " + options_.slot + " failed");
    }
    if (PQsetnonblocking(conn_, 1) != 0) fail("cannot make the replication connection non-blocking");
    decoder_ = OutboxStreamDecoder(options_.message_key ? std::optional<WalMessageTag>(WalMessageTag(*options_.message_key))
                                                        : std::nullopt,
                                   system_identifier, database_oid);
    received_ = 0;
    idle_position_ = 0;
    last_status_ = std::chrono::steady_clock::now();
}

int ReplicationStream::socket() const { return conn_ ? PQsocket(conn_) : -1; }

bool ReplicationStream::wait_readable(Millis timeout) const {
    if (!conn_) return false;
    pollfd p{PQsocket(conn_), POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
}

bool ReplicationStream::read_available(std::vector<WalEvent>& events) {
    if (!conn_) throw ReplicationStreamError("the replication stream is not open");
    if (!PQconsumeInput(conn_)) fail("replication connection lost");
    for (;;) {
        char* raw = nullptr;
        int n = PQgetCopyData(conn_, &raw, 1);
        if (n == 0) break;  // no complete frame yet
        if (n == -1) {      // the server ended the COPY: the stream is over
            std::unique_ptr<PGresult, decltype(&PQclear)> res(PQgetResult(conn_), PQclear);
            PQfinish(conn_);
            conn_ = nullptr;
            return false;
        }
        if (n < 0) fail("reading the replication stream failed");
        std::unique_ptr<char, decltype(&PQfreemem)> frame(raw, PQfreemem);
        handle_frame(std::string_view(frame.get(), static_cast<size_t>(n)), events);
    }
    if (std::chrono::steady_clock::now() - last_status_ >= options_.status_interval) send_status();
    flush_output();
    return true;
}

void ReplicationStream::handle_frame(std::string_view bytes, std::vector<WalEvent>& events) {
    ReplicationFrame frame = parse_replication_frame(bytes);
    if (auto* x = std::get_if<XLogData>(&frame)) {
        if (x->wal_start > received_) received_ = x->wal_start;
        decoder_.feed(x->data, events);
        return;
    }
    const auto& k = std::get<PrimaryKeepalive>(frame);
    if (k.wal_end > received_) received_ = k.wal_end;
    if (!decoder_.in_transaction()) idle_position_ = k.wal_end;
    if (k.reply_requested) send_status();
}

void ReplicationStream::confirm(Lsn flushed) {
    if (flushed > confirmed_) confirmed_ = flushed;
}

void ReplicationStream::send_status(bool reply_requested) {
    if (!conn_) return;
    StandbyStatus status;
    status.written = received_ > confirmed_ ? received_ : confirmed_;
    status.flushed = confirmed_;
    status.applied = confirmed_;
    status.client_time = pg_epoch_now_us();
    status.reply_requested = reply_requested;
    std::string bytes = encode_standby_status(status);
    if (PQputCopyData(conn_, bytes.data(), static_cast<int>(bytes.size())) != 1) fail("sending a status update failed");
    last_status_ = std::chrono::steady_clock::now();
    flush_output();
}

void ReplicationStream::flush_output() {
    // Non-blocking: what does not fit the socket now stays in libpq's buffer and goes with
    // the next call (a 34-byte status update practically always fits).
    if (PQflush(conn_) < 0) fail("sending to the replication connection failed");
}

void ReplicationStream::close() {
    if (!conn_) return;
    send_status();
    PQsetnonblocking(conn_, 0);  // the goodbye may block briefly; it is the last thing sent
    if (PQputCopyEnd(conn_, nullptr) == 1) PQflush(conn_);
    PQfinish(conn_);
    conn_ = nullptr;
}

}  // namespace once::relay::wal
