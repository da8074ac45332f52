#include "pq_notices.hpp"

#include <spdlog/spdlog.h>

namespace once::relay {

spdlog::level::level_enum notice_log_level(std::string_view severity) {
    if (severity == "WARNING") return spdlog::level::warn;
    if (severity.substr(0, 5) == "DEBUG") return spdlog::level::debug;
    return spdlog::level::info;
}

std::string notice_log_line(std::string_view connection, std::string_view severity, std::string_view message) {
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.remove_suffix(1);
    std::string line(connection);
    line += ": ";
    line += severity;
    line += ": ";
    line += message;
    return line;
}

namespace {

void receive(void* arg, const PGresult* res) {
    const char* severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    if (!severity) severity = PQresultErrorField(res, PG_DIAG_SEVERITY);
    const char* message = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    std::string_view sev = severity ? severity : "NOTICE";
    spdlog::log(notice_log_level(sev), notice_log_line(static_cast<const char*>(arg), sev, message ? message : ""));
}

}  // namespace

void log_notices(PGconn* conn, const char* connection) {
    if (conn) PQsetNoticeReceiver(conn, receive, const_cast<char*>(connection));
}

}  // namespace once::relay
