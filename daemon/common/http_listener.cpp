#include "http_listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <stdexcept>

namespace once::relay {

bool is_loopback_host(const std::string& host) {
    if (host == "localhost") return true;
    in_addr v4{};
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    in6_addr v6{};
    if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
        return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
    }
    return false;
}

std::string client_address(MHD_Connection* connection) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!info || !info->client_addr) return "";
    char text[INET6_ADDRSTRLEN] = "";
    const sockaddr* sa = info->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof text);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, text, sizeof text);
    return text;
}

HttpListener::HttpListener(const std::string& option, const std::string& address, const ListenerLimits& limits,
                           const ListenerHandlers& handlers, const std::string& public_warning)
    : handlers_(handlers), deadlines_(limits.request_timeout) {
    auto colon = address.rfind(':');
    std::string host = address.substr(0, colon);
    int port = std::stoi(address.substr(colon + 1));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host == "localhost") host = "127.0.0.1";
    if (!is_loopback_host(host)) spdlog::warn("{}", public_warning);
    sockaddr_storage ss{};
    // MHD_USE_AUTO picks epoll or poll: select() could not watch descriptors above 1023. No
    // MHD_USE_ERROR_LOG: it printed a raw stderr line (into the journal) per client that
    // closed mid-request or found a limit reached, so slow clients also flooded the log.
    unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD;
    if (handlers.suspends) flags |= MHD_ALLOW_SUSPEND_RESUME;
    if (inet_pton(AF_INET, host.c_str(), &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr) == 1) {
        auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
        sin->sin_family = AF_INET;
        sin->sin_port = htons(static_cast<uint16_t>(port));
    } else if (inet_pton(AF_INET6, host.c_str(), &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr) == 1) {
        auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(static_cast<uint16_t>(port));
        flags |= MHD_USE_IPv6;
    } else {
        throw std::runtime_error(option + " \"" + address + "\": the host must be a numeric address (127.0.0.1, ::1) or localhost");
    }
    auto idle_s = static_cast<unsigned>((limits.request_timeout.count() + 999) / 1000);
    closer_ = std::thread([this] { close_late_requests(); });
    daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &on_access, this, MHD_OPTION_SOCK_ADDR, &ss,
                               MHD_OPTION_THREAD_POOL_SIZE, limits.threads,
                               MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
                               MHD_OPTION_CONNECTION_LIMIT, limits.max_connections,
                               MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits.max_per_address,
                               MHD_OPTION_NOTIFY_CONNECTION, &on_connection, this,
                               MHD_OPTION_NOTIFY_COMPLETED, &on_completed, this, MHD_OPTION_END);
    if (!daemon_) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            stopping_ = true;
        }
        wake_.notify_all();
        closer_.join();
        throw std::runtime_error(option + ": cannot listen on " + address + " (address in use or not local)");
    }
    const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    port_ = info ? info->port : port;
}

HttpListener::~HttpListener() {
    MHD_stop_daemon(daemon_);   // closes every connection (on_connection forgets each)
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    closer_.join();
    for (auto& [id, c] : connections_) delete c;
}

void HttpListener::on_connection(void* cls, MHD_Connection* c, void** socket_context, MHD_ConnectionNotificationCode code) {
    auto* self = static_cast<HttpListener*>(cls);
    std::lock_guard<std::mutex> lock(self->mu_);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!info) return;
        auto* conn = new Connection{self->next_id_++, info->connect_fd};
        self->connections_[conn->id] = conn;
        bool was_empty = self->deadlines_.size() == 0;
        self->deadlines_.waiting(conn->id, RequestDeadlines::Clock::now());
        *socket_context = conn;
        if (was_empty) self->wake_.notify_all();   // later deadlines than the one waited for need no wake-up
        return;
    }
    // Closed. libmicrohttpd closes the socket only after this returns, so while a connection
    // is in connections_ (under mu_) its descriptor is its own.
    auto* conn = static_cast<Connection*>(*socket_context);
    if (!conn) return;
    self->connections_.erase(conn->id);
    self->deadlines_.forget(conn->id);
    delete conn;
    *socket_context = nullptr;
}

MhdResult HttpListener::on_access(void* cls, MHD_Connection* c, const char* url, const char* method, const char* version,
                                  const char* upload_data, size_t* upload_data_size, void** con_cls) {
    auto* self = static_cast<HttpListener*>(cls);
    const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (auto* conn = info ? static_cast<Connection*>(info->socket_context) : nullptr) {
        std::lock_guard<std::mutex> lock(self->mu_);
        // The first call brings the headers, then come the body's pieces; a later call without
        // data means the request has arrived whole.
        if (*upload_data_size == 0 && conn->calls > 0) self->deadlines_.received(conn->id);
        ++conn->calls;
    }
    return self->handlers_.access(self->handlers_.access_cls, c, url, method, version, upload_data, upload_data_size,
                                  con_cls);
}

void HttpListener::on_completed(void* cls, MHD_Connection* c, void** con_cls, MHD_RequestTerminationCode code) {
    auto* self = static_cast<HttpListener*>(cls);
    const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (auto* conn = info ? static_cast<Connection*>(info->socket_context) : nullptr) {
        std::lock_guard<std::mutex> lock(self->mu_);
        // Answered: a kept-alive connection has the same bound for its next request.
        conn->calls = 0;
        bool was_empty = self->deadlines_.size() == 0;
        self->deadlines_.waiting(conn->id, RequestDeadlines::Clock::now());
        if (was_empty) self->wake_.notify_all();
    }
    if (self->handlers_.completed) self->handlers_.completed(self->handlers_.completed_cls, c, con_cls, code);
}

void HttpListener::close_late_requests() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
        for (auto id : deadlines_.expired(RequestDeadlines::Clock::now())) {
            auto it = connections_.find(id);
            // Shut down, not closed: libmicrohttpd sees the end of the stream, closes the
            // connection itself and frees its slot.
            if (it != connections_.end()) ::shutdown(it->second->fd, SHUT_RDWR);
        }
        if (auto next = deadlines_.next()) wake_.wait_until(lock, *next);
        else wake_.wait(lock);
    }
}

}  // namespace once::relay
