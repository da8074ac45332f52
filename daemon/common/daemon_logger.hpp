// The daemons' log (once-relay and once-console): stderr, one line per message, every line
// passed through log_safe(), so no logged value (a user name, a message id, a sink's answer,
// a database error) can break a line or forge one. Escaping here, where the line is written,
// covers every log call, including ones added later.
#pragma once

#include <memory>
#include <string>

namespace spdlog {
class logger;
class formatter;
}  // namespace spdlog

namespace once::relay {

// "%l: %v" under systemd (the journal adds timestamps), else with a timestamp; %v escaped,
// without the line breaks that end it.
std::unique_ptr<spdlog::formatter> escaping_formatter(bool for_journal);

// Makes the thread-safe stderr logger `name` the default one, at `level`, flushed at info.
void install_daemon_logger(const std::string& name, const std::string& level);

}  // namespace once::relay
