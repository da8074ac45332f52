// Where the server's notices and warnings on the daemons' connections go: the daemon's log, as
// log lines with the connection's name, at the level their severity says (libpq would print
// them raw on stderr, outside the log's format and level). A replication connection gets them
// too: a walsender's WARNING (a slot about to be invalidated, say) should reach the operator.
#pragma once

#include <libpq-fe.h>

#include <spdlog/common.h>

#include <string>
#include <string_view>

namespace once::relay {

// The log level of a notice of `severity` (PG_DIAG_SEVERITY_NONLOCALIZED: DEBUG1..5, LOG,
// INFO, NOTICE, WARNING; anything else, as a server older than 9.6 sends it localized, info).
spdlog::level::level_enum notice_log_level(std::string_view severity);

// The log line of a notice: "<connection>: <SEVERITY>: <message>", the message's trailing
// newline dropped.
std::string notice_log_line(std::string_view connection, std::string_view severity, std::string_view message);

// Routes `conn`'s notices to the log. `connection` names it in the log lines; it must outlive
// the connection (a static string).
void log_notices(PGconn* conn, const char* connection);

}  // namespace once::relay
