#include "daemon_logger.hpp"

#include "log_safe.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace once::relay {

namespace {

// %* in the pattern: the message, escaped. Line breaks that end it (libpq's messages end in
// one) are dropped rather than shown as \n: the line ends there anyway.
class EscapedMessage : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
        std::string_view text(msg.payload.data(), msg.payload.size());
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
        std::string safe = log_safe(text);
        dest.append(safe.data(), safe.data() + safe.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessage>(); }
};

}  // namespace

std::unique_ptr<spdlog::formatter> escaping_formatter(bool for_journal) {
    auto f = std::make_unique<spdlog::pattern_formatter>();
    f->add_flag<EscapedMessage>('*').set_pattern(for_journal ? "%l: %*" : "%Y-%m-%d %H:%M:%S.%e %l: %*");
    return f;
}

void install_daemon_logger(const std::string& name, const std::string& level) {
    // _mt: both daemons log from more than one thread.
    auto logger = spdlog::stderr_logger_mt(name);
    // Under systemd the journal adds its own timestamps.
    logger->set_formatter(escaping_formatter(std::getenv("JOURNAL_STREAM") != nullptr));
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(level));
    spdlog::flush_on(spdlog::level::info);
}

}  // namespace once::relay
