// The relay needs a database session of its own: it LISTENs for wake-ups, prepares its
// statements once per connection, and holds a session-level lock for maintenance. A
// transaction-pooling connection (PgBouncer pool_mode=transaction) hands each
// transaction whatever server session is free, so none of that works through it. The relay
// checks at every connect and stops with one line (SessionRequired) instead of retrying.
//
// How it checks (check_own_session): the relay's connection reads its backend pid, then a
// second connection with the same conninfo opens a transaction and reads its own, and the first
// reads its pid again while that transaction is open; twice. A connection that owns its session
// sees one pid throughout, and no other connection can run on that backend. Through a
// transaction pool the idle first connection holds no server: PgBouncer gives the server it
// released last to the second connection's transaction (its idle servers are reused newest
// first; with server_round_robin, oldest first, and then the first connection's next
// transaction lands elsewhere). Either way a pid is shared or changes. A backend pid names one
// live session only, so a direct connection or a session pool is never taken for a pooled one.
// Besides: a prepared statement that already exists when the relay prepares it on a fresh
// connection (SQLSTATE 42P05, "prepared statement "once_ack" already exists") can only come from
// a server session shared with an earlier connection: the same stop.
#pragma once

#include "duration.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

typedef struct pg_conn PGconn;

namespace once::relay {

// The connection does not own its server session (a transaction pool): a configuration
// problem, not an outage. The relay stops (exit status kExitSessionRequired) instead of
// reconnecting.
class SessionRequired : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// EX_CONFIG (sysexits.h): the systemd units do not restart the relay on it
// (RestartPreventExitStatus), so the line stays the last one in the journal.
constexpr int kExitSessionRequired = 78;

// Backend pids seen by the probe: `own` on the relay's connection (in order), `other` on the
// second connection, each inside a transaction open while `own`'s next pid was read.
struct SessionProbe {
    std::vector<int> own;
    std::vector<int> other;
};

// Why the pids show a shared session (for the log line), or nothing when the relay's
// connection kept one backend that no other connection used.
std::optional<std::string> shared_session_evidence(const SessionProbe& probe);

// SQLSTATE 42P05 (duplicate_prepared_statement) when the relay prepares on a fresh connection.
bool prepare_clash_sqlstate(const char* code);
// SQLSTATE 26000 (invalid_sql_statement_name): a statement the relay prepared on this
// connection is gone, as when a pool moved the connection to another server session.
bool prepared_statement_missing_sqlstate(const char* code);

// The one line the relay stops with. `redacted_conninfo` has no password.
std::string session_required_message(const std::string& redacted_conninfo, const std::string& evidence);

// Runs the probe on `conn` (connected, idle, no transaction open) with a second connection to
// `conninfo`. Throws SessionRequired when the session is shared, std::runtime_error when a
// probe query fails (the caller treats that as a lost connection). The second connection is
// closed before returning.
void check_own_session(PGconn* conn, const std::string& conninfo, const std::string& redacted_conninfo,
                       const std::string& application_name, Millis connect_timeout);

}  // namespace once::relay
