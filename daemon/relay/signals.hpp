// Signals arrive through a signalfd that the poll loop reads: no handler runs asynchronously,
// so there is no global flag at all. block_relay_signals() must run first in main, before
// any thread (libnats, libmicrohttpd) starts, so every thread inherits the blocked mask.
#pragma once

namespace once::relay {

struct SignalEvents {
    bool stop = false;     // SIGTERM or SIGINT
    bool reload = false;   // SIGHUP
};

void block_relay_signals();

class SignalFd {
public:
    SignalFd();
    ~SignalFd();
    SignalFd(const SignalFd&) = delete;
    SignalFd& operator=(const SignalFd&) = delete;
    int fd() const { return fd_; }
    // Non-blocking: accumulates what arrived since the last call into `ev`.
    void read(SignalEvents& ev);

private:
    int fd_ = -1;
};

}  // namespace once::relay
