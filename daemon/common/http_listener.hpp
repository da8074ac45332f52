// The libmicrohttpd listener of both daemons (once-relay's /metrics and /healthz, once-console's
// pages): binds host:port and bounds what clients can hold, so that slow or idle connections
// cannot take the listener from the people who need it:
//   - at most `max_connections` connections, and at most `max_per_address` from one address;
//   - each request must arrive whole (headers and body) within `request_timeout` of the
//     connection opening or of the previous answer, however slowly it trickles in; a
//     connection past that bound is shut down. libmicrohttpd's own timeout, which counts only
//     silence, is set to the same bound for connections that send nothing.
#pragma once

#include "request_deadlines.hpp"

#include <microhttpd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace once::relay {

#if MHD_VERSION >= 0x00097002
using MhdResult = MHD_Result;
#else
using MhdResult = int;
#endif

struct ListenerLimits {
    unsigned max_connections = 256;
    unsigned max_per_address = 16;
    std::chrono::milliseconds request_timeout{10000};
    unsigned threads = 0;   // request threads; 0: the listener's one internal thread
};

struct ListenerHandlers {
    MHD_AccessHandlerCallback access = nullptr;
    void* access_cls = nullptr;
    MHD_RequestCompletedCallback completed = nullptr;   // optional
    void* completed_cls = nullptr;
    // The access handler suspends connections while another thread works out their answer
    // (MHD_suspend_connection / MHD_resume_connection).
    bool suspends = false;
};

// True for a numeric loopback address (127.0.0.0/8, ::1, ::ffff:127.x.y.z) or "localhost".
// Neither daemon's listener is safe to expose without thought: anything else gets the
// listener's `public_warning` at start.
bool is_loopback_host(const std::string& host);

// The numeric address of the connection's client ("127.0.0.1", "::1"), or "" if unknown.
std::string client_address(MHD_Connection* connection);

class HttpListener {
public:
    // `option` names the setting in messages ("--listen"); `address` is host:port with a numeric
    // host or localhost. `public_warning` is logged when the host is not a loopback address.
    // Throws std::runtime_error when the address is invalid or cannot be bound.
    HttpListener(const std::string& option, const std::string& address, const ListenerLimits& limits,
                 const ListenerHandlers& handlers, const std::string& public_warning);
    ~HttpListener();
    HttpListener(const HttpListener&) = delete;
    HttpListener& operator=(const HttpListener&) = delete;
    int port() const { return port_; }

private:
    struct Connection {
        std::uint64_t id;
        int fd;
        unsigned calls = 0;   // calls of the access handler for the current request
    };
    static void on_connection(void* cls, MHD_Connection* c, void** socket_context, MHD_ConnectionNotificationCode code);
    static MhdResult on_access(void* cls, MHD_Connection* c, const char* url, const char* method, const char* version,
                               const char* upload_data, size_t* upload_data_size, void** con_cls);
    static void on_completed(void* cls, MHD_Connection* c, void** con_cls, MHD_RequestTerminationCode code);
    void close_late_requests();

    ListenerHandlers handlers_;
    std::mutex mu_;
    std::condition_variable wake_;
    bool stopping_ = false;
    RequestDeadlines deadlines_;
    std::map<std::uint64_t, Connection*> connections_;
    std::uint64_t next_id_ = 1;
    std::thread closer_;
    MHD_Daemon* daemon_ = nullptr;
    int port_ = 0;
};

}  // namespace once::relay
