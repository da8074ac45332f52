// The relayed database: one libpq connection that LISTENs for wake-ups and calls
// once.claim / ack / nack / extend, plus the maintenance calls. Calls are short and
// synchronous; waiting for a wake-up is done by the relay's poll() loop on socket().
#pragma once

#include "outbox/outbox_session.hpp"
#include "duration.hpp"
#include "message.hpp"

#include "core/names.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

typedef struct pg_conn PGconn;

namespace once::relay {

// The connection failed or broke: reconnect. (A plain std::runtime_error from a call means
// the server answered with an error; the connection is still fine.)
class DbLost : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The channel once.send's wake-ups arrive on (the outbox's coalescing notifier).
constexpr const char* kWakeChannel = once::kOutboxWakeChannel;  // core/names.hpp

class SourceDb final : public OutboxSession {
public:
    SourceDb(std::string conninfo, std::string relay_name, Millis connect_timeout, std::string synchronous_commit = "off");
    ~SourceDb() override;
    SourceDb(const SourceDb&) = delete;
    SourceDb& operator=(const SourceDb&) = delete;

    // Connects (any host of a multi-host conninfo; target_session_attrs is the user's
    // choice), checks pg_once is installed, LISTENs. Throws DbLost (retry later) or
    // std::runtime_error (configuration problem, e.g. the extension is missing).
    void connect() override;
    void disconnect() override;
    bool connected() const override;
    int socket() const override;
    std::string server() const override;   // host:port we are connected to, for logs
    const std::string& redacted_conninfo() const override { return redacted_; }

    // Reads pending input; true when at least one wake-up notification arrived.
    bool consume_wakeups() override;

    std::vector<Message> claim(int batch, Millis lease, const std::vector<std::string>& topics) override;
    // Returns how many the outbox accepted (a lease taken over by another relay is refused).
    int64_t ack(const std::vector<std::string>& ids) override;
    // Returns the outbox's verdict: "retry", "dead" (attempts exhausted) or "stale".
    std::string nack(const std::string& id, const std::string& error, std::optional<Millis> retry_after) override;
    // Permanent failure: dead-letter at once (once.dead).
    void dead(const std::string& id, const std::string& error) override;
    void extend(const std::vector<std::string>& ids, Millis lease) override;

    // Maintenance under a session advisory lock: true if this relay holds it.
    bool try_maintenance_lock() override;
    // once.purge(): returns the rows removed. once.saga_tick(): fires due saga timers.
    int64_t purge() override;
    void saga_tick() override;
    std::optional<WaitingCount> waiting_messages(const std::string& wal_slot = {}) override;

    // Validates a conninfo without connecting; throws std::runtime_error with libpq's reason.
    static void check_conninfo(const std::string& conninfo);

private:
    struct Result;
    Result exec(const char* stmt_name_or_sql, bool prepared, const std::vector<const char*>& params);
    [[noreturn]] void raise(const std::string& what, const char* err);

    std::string conninfo_;
    std::string redacted_;
    std::string name_;
    Millis connect_timeout_;
    std::string synchronous_commit_;
    PGconn* conn_ = nullptr;
    bool holds_lock_ = false;
};

}  // namespace once::relay
