#include "inbound/webhook_receiver.hpp"

#include "inbound/webhook_verify.hpp"
#include "log_safe.hpp"
#include "sinks/postgres_sink.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>

namespace once::relay {

struct WebhookReceiver::Request {
    MHD_Connection* connection = nullptr;
    std::string path;
    std::string body;
    bool too_large = false;
    bool admitted = false;                 // handed to the worker; its connection is suspended
    std::optional<InboundAnswer> answer;   // set by the worker (under mu_)
};

struct WebhookReceiver::Queued {
    std::shared_ptr<Request> request;
    InboundMessage message;
};

namespace {

MhdResult send_answer(MHD_Connection* c, const InboundAnswer& a) {
    MHD_Response* resp =
        MHD_create_response_from_buffer(a.body.size(), const_cast<char*>(a.body.data()), MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (a.retry_after_s > 0) MHD_add_response_header(resp, "Retry-After", std::to_string(a.retry_after_s).c_str());
    if (a.status == 405) MHD_add_response_header(resp, "Allow", "POST");
    MhdResult ret = MHD_queue_response(c, static_cast<unsigned>(a.status), resp);
    MHD_destroy_response(resp);
    return ret;
}

MhdResult collect_header(void* cls, MHD_ValueKind, const char* key, const char* value) {
    auto* headers = static_cast<InboundHeaders*>(cls);
    std::string name = key ? key : "";
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    headers->emplace(std::move(name), value ? value : "");   // a repeated header: the first counts
    return MHD_YES;
}

std::string header_or_empty(const InboundHeaders& h, const char* name) {
    auto it = h.find(name);
    return it == h.end() ? std::string() : it->second;
}

}  // namespace

WebhookReceiver::WebhookReceiver(WebhookReceiverSettings settings) : settings_(std::move(settings)) {
    if (settings_.keys.empty()) throw std::runtime_error("--listen-webhooks: no secret to verify requests with");
    sink_ = std::make_unique<PostgresSink>(PostgresSink::TextIds{}, settings_.conninfo, settings_.source,
                                           settings_.statement_timeout, settings_.connect_timeout);
    sink_->open();   // throws SinkError: no database, no once.deliver
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) throw std::runtime_error("eventfd failed");
    worker_ = std::thread([this] { worker(); });
    ListenerLimits limits;
    limits.max_connections = kWebhookConnectionLimit;
    // Behind a TLS proxy every request comes from the proxy's address: no per-address share.
    limits.max_per_address = kWebhookConnectionLimit;
    limits.request_timeout = kWebhookRequestTimeout;
    ListenerHandlers handlers;
    handlers.access = &WebhookReceiver::on_access;
    handlers.access_cls = this;
    handlers.completed = &WebhookReceiver::on_completed;
    handlers.completed_cls = this;
    handlers.suspends = true;
    try {
        listener_ = std::make_unique<HttpListener>(
            "--listen-webhooks", settings_.address, limits, handlers,
            "--listen-webhooks " + settings_.address +
                " is not a loopback address: serve it through a TLS-terminating proxy (docs/security.md)");
    } catch (...) {
        stop(Millis(0));
        throw;
    }
}

WebhookReceiver::~WebhookReceiver() {
    stop(Millis(0));
    if (wake_fd_ >= 0) ::close(wake_fd_);
}

int WebhookReceiver::port() const { return listener_ ? listener_->port() : 0; }

void WebhookReceiver::stop(Millis drain) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (!stopping_) {
            stopping_ = true;
            drain_until_ = std::chrono::steady_clock::now() + drain;
        }
    }
    if (wake_fd_ >= 0) {
        uint64_t one = 1;
        (void)!::write(wake_fd_, &one, sizeof one);
    }
    if (worker_.joinable()) worker_.join();
    // Every admitted request has its answer and its connection is resumed: give the listener
    // a moment to send those answers before it closes (libmicrohttpd must not be stopped
    // while a connection is suspended).
    {
        std::unique_lock<std::mutex> lock(mu_);
        answered_.wait_for(lock, std::chrono::seconds(2), [this] { return admitted_ == 0; });
    }
    listener_.reset();
}

MhdResult WebhookReceiver::on_access(void* cls, MHD_Connection* c, const char* url, const char* method, const char*,
                                     const char* upload_data, size_t* upload_data_size, void** con_cls) {
    return static_cast<WebhookReceiver*>(cls)->handle(c, url, method, upload_data, upload_data_size, con_cls);
}

void WebhookReceiver::on_completed(void* cls, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
    auto* self = static_cast<WebhookReceiver*>(cls);
    auto* holder = static_cast<std::shared_ptr<Request>*>(*con_cls);
    if (!holder) return;
    {
        std::lock_guard<std::mutex> lock(self->mu_);
        if ((*holder)->admitted && --self->admitted_ == 0) self->answered_.notify_all();
    }
    delete holder;
    *con_cls = nullptr;
}

MhdResult WebhookReceiver::handle(MHD_Connection* c, const char* url, const char* method, const char* upload_data,
                                  size_t* upload_data_size, void** con_cls) {
    auto* holder = static_cast<std::shared_ptr<Request>*>(*con_cls);
    if (!holder) {
        auto r = std::make_shared<Request>();
        r->connection = c;
        r->path = url ? url : "";
        *con_cls = new std::shared_ptr<Request>(r);
        if (std::strcmp(method, "POST") != 0) return send_answer(c, refusal(405, "use POST"));
        if (!is_webhook_path(r->path))
            return send_answer(c, refusal(404, "not found: post to /webhooks or /webhooks/<topic>"));
        const char* length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (length && std::strtoull(length, nullptr, 10) > settings_.max_body)
            return send_answer(c, refusal(413, "the body is larger than " + std::to_string(settings_.max_body) + " bytes"));
        return MHD_YES;
    }
    Request& r = **holder;
    if (*upload_data_size > 0) {
        if (!r.too_large && r.body.size() + *upload_data_size <= settings_.max_body) {
            r.body.append(upload_data, *upload_data_size);
        } else {
            r.too_large = true;   // read on to the end, keep nothing
            r.body.clear();
            r.body.shrink_to_fit();
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r.admitted) {   // resumed by the worker
        std::optional<InboundAnswer> answer;
        {
            std::lock_guard<std::mutex> lock(mu_);
            answer = r.answer;
        }
        if (!answer) return MHD_YES;   // not yet (a resume is always preceded by the answer)
        return send_answer(c, *answer);
    }
    if (r.too_large)
        return send_answer(c, refusal(413, "the body is larger than " + std::to_string(settings_.max_body) + " bytes"));
    return admit(c, *holder);
}

MhdResult WebhookReceiver::admit(MHD_Connection* c, const std::shared_ptr<Request>& r) {
    InboundHeaders headers;
    MHD_get_connection_values(c, MHD_HEADER_KIND, &collect_header, &headers);
    std::string id = header_or_empty(headers, "webhook-id");
    auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
    WebhookCheck check = verify_webhook(settings_.keys, id, header_or_empty(headers, "webhook-timestamp"),
                                        header_or_empty(headers, "webhook-signature"), r->body, now.count(),
                                        settings_.tolerance);
    if (check != WebhookCheck::verified) {
        // Neither the signature nor anything derived from a secret is logged.
        log_refusal(c, 401, describe(check), id);
        return send_answer(c, refusal(401, describe(check)));
    }
    InboundParse parsed = parse_inbound_request(r->path, headers, r->body);
    if (!parsed.message) {
        log_refusal(c, parsed.status, parsed.reason, id);
        return send_answer(c, refusal(parsed.status, parsed.reason));
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return send_answer(c, refusal(503, "shutting down", 1));
    if (delivering_ >= settings_.concurrency)
        return send_answer(c, refusal(503, "too many requests at once (--webhooks-concurrency)", 1));
    ++delivering_;
    ++admitted_;
    r->admitted = true;
    // Suspended before the worker can see it, so its resume always follows this suspend.
    MHD_suspend_connection(c);
    queue_.push_back(std::make_unique<Queued>(Queued{r, std::move(*parsed.message)}));
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    return MHD_YES;
}

void WebhookReceiver::log_refusal(MHD_Connection* c, int status, const std::string& reason, const std::string& id) {
    uint64_t n = refusals_log_.record(RateLimitedLog::Clock::now());
    if (n == 0) return;
    spdlog::info("webhook refused ({}, {}): webhook-id \"{}\" from {}{}", status, log_safe(reason),
                 log_safe(id.substr(0, 255)), client_address(c),
                 n > 1 ? " (" + std::to_string(n - 1) + " more refused since the previous line)" : std::string());
}

void WebhookReceiver::finish(const std::shared_ptr<Request>& r, const InboundAnswer& answer) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        r->answer = answer;
        --delivering_;
    }
    MHD_resume_connection(r->connection);
}

void WebhookReceiver::worker() {
    std::map<uint64_t, std::pair<std::shared_ptr<Request>, std::string>> waiting;   // token -> request, message id
    uint64_t next_token = 1;
    std::vector<pollfd> fds;
    std::vector<Outcome> outcomes;
    auto settle = [&](std::vector<Outcome>& outs) {
        for (auto& o : outs) {
            auto it = waiting.find(o.token);
            if (it == waiting.end()) continue;
            const std::string& id = it->second.second;
            if (o.verdict == Verdict::delivered)
                spdlog::debug("webhook \"{}\" delivered", log_safe(id));
            else
                spdlog::warn("webhook \"{}\" {}: {}", log_safe(id),
                             o.verdict == Verdict::dead ? "refused (422, poison)" : "not processed (503)", log_safe(o.error));
            finish(it->second.first, answer_for(o));
            waiting.erase(it);
        }
        outs.clear();
    };
    // Requests that arrive while a transaction is in flight wait for it and then go together,
    // as one transaction (up to the sink's group size): one commit, one WAL flush for all of
    // them. Handing each to the sink at once pipelined one transaction per request, so with
    // durable commits the receiver ran at the disk's flush rate whatever the concurrency
    // (tests/bench/webhook_inbound.sh: 245 requests/s from 8 clients against 2982 through SQL).
    std::vector<std::unique_ptr<Queued>> held;
    for (;;) {
        std::vector<std::unique_ptr<Queued>> batch;
        bool stopping;
        std::chrono::steady_clock::time_point drain_until;
        {
            std::lock_guard<std::mutex> lock(mu_);
            for (auto& q : queue_) held.push_back(std::move(q));
            queue_.clear();
            stopping = stopping_;
            drain_until = drain_until_;
        }
        if (sink_->in_flight() == 0) batch.swap(held);
        bool ready = batch.empty() || sink_->ready();
        for (auto& q : batch) {
            if (!ready) {
                spdlog::warn("webhook \"{}\" not processed (503): the inbox database is unreachable",
                             log_safe(q->message.id));
                finish(q->request, refusal(503, "the inbox database is unreachable", 5));
                continue;
            }
            uint64_t token = next_token++;
            Message m;
            m.id = q->message.id;
            m.topic = q->message.topic;
            m.payload = q->message.payload;
            m.headers = q->message.headers;
            waiting.emplace(token, std::make_pair(q->request, q->message.id));
            sink_->submit(token, m);
        }
        if (stopping && waiting.empty() && held.empty()) break;
        if (stopping && std::chrono::steady_clock::now() >= drain_until) {
            sink_->abandon(outcomes);
            settle(outcomes);
            for (auto& q : held) finish(q->request, refusal(503, "shutting down", 1));
            held.clear();
            for (auto& [token, w] : waiting) finish(w.first, refusal(503, "shutting down", 1));
            waiting.clear();
            break;
        }
        fds.clear();
        fds.push_back(pollfd{wake_fd_, POLLIN, 0});
        sink_->poll_fds(fds);
        int timeout = sink_->poll_timeout_ms();
        if (timeout < 0 || timeout > 1000) timeout = 1000;
        if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) spdlog::warn("poll: {}", std::strerror(errno));
        uint64_t n;
        while (::read(wake_fd_, &n, sizeof n) > 0) {}
        sink_->process(fds.data() + 1, fds.size() - 1, outcomes);
        settle(outcomes);
    }
}

}  // namespace once::relay
