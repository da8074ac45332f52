#include "metrics_listener.hpp"

#include "db_metrics.hpp"
#include "http_listener.hpp"
#include "log_safe.hpp"

#include <microhttpd.h>
#include <spdlog/spdlog.h>

#include <cstring>

namespace once::console {

namespace {

relay::MhdResult respond(MHD_Connection* c, unsigned status, const std::string& body, const char* type) {
    MHD_Response* r = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", type);
    relay::MhdResult ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

relay::MhdResult handle(void* cls, MHD_Connection* c, const char* url, const char* method, const char*, const char*,
                        size_t*, void**) {
    auto* self = static_cast<MetricsListener*>(cls);
    if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0)
        return respond(c, 405, "method not allowed\n", "text/plain");
    if (std::strcmp(url, "/metrics") == 0)
        return respond(c, 200, self->scrape(), "text/plain; version=0.0.4; charset=utf-8");
    return respond(c, 404, "not found: try /metrics\n", "text/plain");
}

}  // namespace

MetricsListener::MetricsListener(const std::string& address, std::vector<DbConfig> dbs) {
    for (auto& d : dbs) dbs_.push_back(Watched{std::move(d), {}, {}, false});
    relay::ListenerLimits limits;
    limits.max_connections = 64;
    limits.max_per_address = 16;
    limits.request_timeout = std::chrono::milliseconds(5000);
    relay::ListenerHandlers handlers;
    handlers.access = &handle;
    handlers.access_cls = this;
    listener_ = std::make_unique<relay::HttpListener>(
        "--metrics-listen", address, limits, handlers,
        "metrics on " + address + ": not a loopback address; /metrics answers anyone who can reach it, without "
        "authentication (bind 127.0.0.1 or ::1, or firewall the port)");
}

MetricsListener::~MetricsListener() = default;

int MetricsListener::port() const { return listener_->port(); }

std::string MetricsListener::scrape() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<DbView> views;
    std::vector<std::set<std::string>> seen;
    for (Watched& w : dbs_) {
        DbView v;
        try {
            v = read_db_metrics(w.db);
            w.database = v.database;
            if (w.failing) spdlog::info("metrics: reading database {} again", relay::log_safe(w.database));
            w.failing = false;
        } catch (const std::exception& e) {
            if (!w.failing) spdlog::warn("metrics: cannot read a database: {}", relay::log_safe(e.what()));
            w.failing = true;
            reset_thread_connection();
            v = DbView{};
            v.database = w.database;
        }
        views.push_back(std::move(v));
        seen.push_back(std::move(w.seen_topics));
    }
    std::string text = render_db_metrics(views, seen);
    for (size_t i = 0; i < dbs_.size(); ++i) dbs_[i].seen_topics = std::move(seen[i]);
    return text;
}

}  // namespace once::console
