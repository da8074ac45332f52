// The relay needs a database session of its own: it LISTENs for wake-ups, prepares its
// statements once per connection, and holds a session-level lock for maintenance. A
// transaction-pooling connection (PgBouncer pool_mode=transaction) hands each
// transaction whatever server session is free, so none of that works through it. The relay
// checks at every connect and stops with one line (SessionRequired) instead of retrying.
//
// How it checks (check_own_session: two connections compare backend pids) and why a
// prepared statement that already exists (42P05) means the same: docs/poolers.md, "once-relay".
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
