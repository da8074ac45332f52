#include "metrics_server.hpp"

#include "http_listener.hpp"

#include <microhttpd.h>

#include <cstring>

namespace once::relay {

namespace {

using handler_result = MhdResult;

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

MetricsServer::MetricsServer(const std::string& address, const Metrics& metrics, std::string relay_name)
    : metrics_(metrics), relay_name_(std::move(relay_name)) {
    ListenerLimits limits;
    limits.max_connections = kMetricsConnectionLimit;
    limits.max_per_address = kMetricsConnectionsPerAddress;
    limits.request_timeout = kMetricsRequestTimeout;
    ListenerHandlers handlers;
    handlers.access = &handle;
    handlers.access_cls = this;
    listener_ = std::make_unique<HttpListener>(
        "--metrics", address, limits, handlers,
        "metrics on " + address + ": not a loopback address; /metrics and /healthz answer anyone who can reach it, "
        "without authentication (bind 127.0.0.1 or ::1, or firewall the port)");
}

MetricsServer::~MetricsServer() = default;

int MetricsServer::port() const { return listener_->port(); }

}  // namespace once::relay
