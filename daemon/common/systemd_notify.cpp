#include "systemd_notify.hpp"

#include <systemd/sd-daemon.h>

#include <cstdlib>

namespace once::relay {

SystemdNotifier::SystemdNotifier() {
    enabled_ = std::getenv("NOTIFY_SOCKET") != nullptr;
    uint64_t usec = 0;
    if (enabled_ && sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
        watchdog_interval_ = Millis(static_cast<int64_t>(usec / 2000));
}

void SystemdNotifier::ready() { if (enabled_) sd_notify(0, "READY=1\nSTATUS=relaying"); }
void SystemdNotifier::reloading() { if (enabled_) sd_notify(0, "RELOADING=1"); }
void SystemdNotifier::stopping() { if (enabled_) sd_notify(0, "STOPPING=1"); }
void SystemdNotifier::status(const std::string& text) {
    if (enabled_) sd_notify(0, ("STATUS=" + text).c_str());
}

int SystemdNotifier::watchdog_tick() {
    if (!enabled_ || watchdog_interval_.count() <= 0) return -1;
    auto now = std::chrono::steady_clock::now();
    if (now >= next_ping_) {
        sd_notify(0, "WATCHDOG=1");
        next_ping_ = now + watchdog_interval_;
    }
    return static_cast<int>(std::chrono::duration_cast<Millis>(next_ping_ - now).count());
}

}  // namespace once::relay
