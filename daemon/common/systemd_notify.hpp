// systemd Type=notify: READY=1 after the first LISTEN, RELOADING=1 / READY=1 around a reload,
// STOPPING=1 on shutdown, WATCHDOG=1 at half the WatchdogSec interval. No-ops outside systemd.
#pragma once

#include "duration.hpp"

#include <chrono>
#include <string>

namespace once::relay {

class SystemdNotifier {
public:
    SystemdNotifier();
    void ready();
    void reloading();
    void stopping();
    void status(const std::string& text);
    // Sends WATCHDOG=1 when due; returns ms until the next ping (-1: no watchdog).
    int watchdog_tick();

private:
    bool enabled_ = false;
    Millis watchdog_interval_{0};
    std::chrono::steady_clock::time_point next_ping_{};
};

}  // namespace once::relay
