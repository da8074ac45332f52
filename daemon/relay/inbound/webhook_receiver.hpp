// once-relay --listen-webhooks: an HTTP endpoint that delivers signed webhooks (Standard
// Webhooks, CloudEvents) into the inbox of the --db database with once.deliver, so that each
// one takes effect once however often the sender sends it.
//
// One libmicrohttpd listener (http_listener: connection limits, request deadline) reads each
// request whole, refuses what is too large (413), unsigned or badly signed (401), malformed
// (400, 404, 415) or beyond the concurrency limit (503 + Retry-After), and suspends the
// connection of what remains. One worker thread owns the inbox connection (the PostgreSQL
// sink, sinks/postgres_sink: once.deliver calls, those sent together in one transaction, a
// failing handler retried alone and recorded with once.inbox_failed), keeps one transaction
// in flight and sends what arrived meanwhile together in the next, and resumes each
// connection with its answer once its transaction has committed or rolled back
// (inbound/inbox_answer). No handler runs for a refused request.
#pragma once

#include "duration.hpp"
#include "http_listener.hpp"
#include "inbound/inbound_request.hpp"
#include "inbound/inbox_answer.hpp"
#include "rate_limited_log.hpp"
#include "sinks/webhook_signature.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace once::relay {

class PostgresSink;

// A request must arrive whole (headers and body) within this bound of its connection
// opening or of the previous answer on it (http_listener.hpp).
constexpr std::chrono::milliseconds kWebhookRequestTimeout{10000};
constexpr unsigned kWebhookConnectionLimit = 1024;

struct WebhookReceiverSettings {
    std::string address;                 // host:port
    std::string conninfo;                // the inbox database
    std::string source;                  // the inbox source of every message
    std::vector<WebhookKey> keys;        // at least one
    size_t max_body = 1024 * 1024;       // bytes
    unsigned concurrency = 64;           // requests being delivered at once
    std::chrono::seconds tolerance{300}; // webhook-timestamp, either direction
    Millis statement_timeout{10000};     // one once.deliver
    Millis connect_timeout{5000};
};

class WebhookReceiver {
public:
    // Connects to the inbox database (throws SinkError when it cannot, or when it has no
    // once.deliver) and binds the address (throws std::runtime_error).
    explicit WebhookReceiver(WebhookReceiverSettings settings);
    ~WebhookReceiver();
    WebhookReceiver(const WebhookReceiver&) = delete;
    WebhookReceiver& operator=(const WebhookReceiver&) = delete;
    int port() const;
    // Refuses new requests (503), lets those being delivered finish for up to `drain`, answers
    // the rest 503 and closes the listener.
    void stop(Millis drain);

private:
    struct Request;
    struct Queued;
    static MhdResult on_access(void* cls, MHD_Connection* c, const char* url, const char* method, const char* version,
                               const char* upload_data, size_t* upload_data_size, void** con_cls);
    static void on_completed(void* cls, MHD_Connection* c, void** con_cls, MHD_RequestTerminationCode code);
    MhdResult handle(MHD_Connection* c, const char* url, const char* method, const char* upload_data,
                     size_t* upload_data_size, void** con_cls);
    // Verifies and parses a request that has arrived whole; admits it or answers at once.
    MhdResult admit(MHD_Connection* c, const std::shared_ptr<Request>& r);
    // Anyone can send refused requests as often as they like: at most one line per second.
    void log_refusal(MHD_Connection* c, int status, const std::string& reason, const std::string& id);
    void worker();
    void finish(const std::shared_ptr<Request>& r, const InboundAnswer& answer);
    WebhookReceiverSettings settings_;
    std::unique_ptr<PostgresSink> sink_;
    RateLimitedLog refusals_log_{std::chrono::seconds(1)};   // the listener's thread only
    std::mutex mu_;
    std::condition_variable answered_;
    std::vector<std::unique_ptr<Queued>> queue_;   // admitted, not yet given to the sink
    bool stopping_ = false;
    std::chrono::steady_clock::time_point drain_until_{};
    unsigned admitted_ = 0;          // admitted requests whose answer is not yet sent
    unsigned delivering_ = 0;        // admitted requests without an answer yet
    int wake_fd_ = -1;               // eventfd: the worker has work
    std::thread worker_;
    std::unique_ptr<HttpListener> listener_;
};

}  // namespace once::relay
