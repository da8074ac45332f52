#include "metrics_server.hpp"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <stdexcept>

namespace once::relay {

namespace {

#if MHD_VERSION >= 0x00097002
using handler_result = MHD_Result;
#else
using handler_result = int;
#endif

handler_result respond(MHD_Connection* c, unsigned status, const std::string& body, const char* type) {
    MHD_Response* r = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()),
                                                      MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", type);
    handler_result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

handler_result handle(void* cls, MHD_Connection* c, const char* url, const char* method, const char*,
                      const char*, size_t*, void**) {
    auto* self = static_cast<MetricsServer*>(cls);
    if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0)
        return respond(c, 405, "method not allowed\n", "text/plain");
    if (std::strcmp(url, "/metrics") == 0)
        return respond(c, 200, self->metrics().render_prometheus(self->relay_name()),
                       "text/plain; version=0.0.4; charset=utf-8");
    if (std::strcmp(url, "/healthz") == 0) {
        const Metrics& m = self->metrics();
        std::string body = std::string("db ") + (m.db_connected ? "up" : "down") + "\nsink " +
                           (m.sink_connected ? "up" : "down") + "\n";
        static const char* const kSlot[] = {"usable", "missing", "invalidated", "refused (physical standbys)"};
        if (int v = m.wal_slot_verdict.load(); v >= 0 && v <= 3) body += std::string("wal slot ") + kSlot[v] + "\n";
        if (int v = m.wal_newer_format.load(); v > 0)
            body += "wal stream stopped before a message of format version " + std::to_string(v) + " (upgrade once-relay)\n";
        return respond(c, m.healthy() ? 200 : 503, body, "text/plain");
    }
    return respond(c, 404, "not found: try /metrics or /healthz\n", "text/plain");
}

}  // namespace

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

MetricsServer::MetricsServer(const std::string& address, const Metrics& metrics, std::string relay_name)
    : metrics_(metrics), relay_name_(std::move(relay_name)) {
    auto colon = address.rfind(':');
    std::string host = address.substr(0, colon);
    int port = std::stoi(address.substr(colon + 1));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host == "localhost") host = "127.0.0.1";
    if (!is_loopback_host(host))
        spdlog::warn("metrics on {}: not a loopback address; /metrics and /healthz answer anyone who can reach it, "
                     "without authentication (bind 127.0.0.1 or ::1, or firewall the port)", address);
    sockaddr_storage ss{};
    // MHD_USE_AUTO picks epoll or poll: select() could not watch descriptors above 1023,
    // and the connection limit below is well past 16. No MHD_USE_ERROR_LOG: it printed a
    // raw stderr line (into the journal) per client that closed mid-request or found the
    // limit reached, so slow clients also flooded the log; a failure to listen is reported
    // below by the relay itself.
    unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD;
    socklen_t len;
    if (inet_pton(AF_INET, host.c_str(), &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr) == 1) {
        auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
        sin->sin_family = AF_INET;
        sin->sin_port = htons(static_cast<uint16_t>(port));
        len = sizeof(sockaddr_in);
    } else if (inet_pton(AF_INET6, host.c_str(), &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr) == 1) {
        auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(static_cast<uint16_t>(port));
        flags |= MHD_USE_IPv6;
        len = sizeof(sockaddr_in6);
    } else {
        throw std::runtime_error("--metrics \"" + address + "\": the host must be a numeric address (127.0.0.1, ::1) or localhost");
    }
    (void)len;
    daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &handle, this, MHD_OPTION_SOCK_ADDR, &ss,
                               MHD_OPTION_CONNECTION_TIMEOUT, kMetricsIdleTimeoutS,
                               MHD_OPTION_CONNECTION_LIMIT, kMetricsConnectionLimit, MHD_OPTION_END);
    if (!daemon_) throw std::runtime_error("--metrics: cannot listen on " + address + " (address in use or not local)");
    const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    port_ = info ? info->port : port;
}

MetricsServer::~MetricsServer() {
    if (daemon_) MHD_stop_daemon(daemon_);
}

}  // namespace once::relay
