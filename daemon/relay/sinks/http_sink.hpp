// http(s):// — POST each payload to the URL (libcurl multi interface: many requests at once
// over kept-alive connections, driven by the relay's poll loop through curl's socket API).
// Headers: Idempotency-Key: <message id>, Content-Type: application/json, X-Once-Topic,
// X-Once-Key (when the message has a key), X-Once-Attempt, and the message's own headers.
// With signing keys: webhook-id (the message id), webhook-timestamp (unix seconds at this
// attempt) and webhook-signature (Standard Webhooks, sinks/webhook_signature.hpp). With a
// CloudEvents source: the ce-* attributes (binary content mode, sinks/cloudevents.hpp). With
// the envelope body, the body holds the topic, key and headers beside the payload
// (sinks/webhook_envelope.hpp), so that the signature covers them.
// 2xx delivered; 408/425/429/5xx and network errors retry (honouring Retry-After); other
// statuses are dead with the status and a body excerpt as the error.
#pragma once

#include "sinks/sink.hpp"
#include "sinks/webhook_envelope.hpp"
#include "sinks/webhook_signature.hpp"

#include <chrono>
#include <map>
#include <string>
#include <vector>

typedef void CURLM;
typedef void CURL;

namespace once::relay {

class HttpSink final : public Sink {
public:
    HttpSink(std::string url, Millis timeout, Millis connect_timeout, size_t max_connections);
    ~HttpSink() override;
    const char* kind() const override { return "http"; }
    ClaimMode preferred_claim_mode() const override { return ClaimMode::leased; }   // receivers may be slow
    std::string describe() const override;
    void open() override;
    bool ready() override;
    bool ready_tracks_connection() const override { return false; }
    void submit(uint64_t token, const Message& m) override;
    void poll_fds(std::vector<pollfd>& fds) override;
    int poll_timeout_ms() override;
    void process(const pollfd* fds, size_t nfds, std::vector<Outcome>& out) override;
    size_t in_flight() const override { return requests_.size(); }
    void abandon(std::vector<Outcome>& out) override;
    size_t max_window() const { return max_connections_; }
    // Sign every request with these keys (several: one signature each, for a rotation).
    void set_webhook_keys(std::vector<WebhookKey> keys) { webhook_keys_ = std::move(keys); }
    // Send CloudEvents binary-mode headers with this ce-source.
    void set_cloudevents_source(std::string source) { ce_source_ = std::move(source); }
    // What the request body is: the payload, or the envelope.
    void set_body(HttpBody body) { body_ = body; }

    // libcurl callbacks (public so the C trampolines can reach them).
    void on_socket(int fd, int what);
    void on_timer(long timeout_ms);

private:
    struct Request;
    void collect(std::vector<Outcome>& out);
    void finish(CURL* easy, int curl_code, std::vector<Outcome>& out);

    std::string url_;
    Millis timeout_;
    Millis connect_timeout_;
    size_t max_connections_;
    CURLM* multi_ = nullptr;
    std::map<int, short> sockets_;    // fd -> poll events curl wants
    bool timer_armed_ = false;
    std::chrono::steady_clock::time_point timer_deadline_;
    std::map<CURL*, Request*> requests_;
    std::vector<CURL*> idle_;          // reusable easy handles
    std::chrono::steady_clock::time_point down_until_{};
    int consecutive_network_errors_ = 0;
    std::vector<WebhookKey> webhook_keys_;
    std::string ce_source_;   // empty: no CloudEvents headers
    HttpBody body_ = HttpBody::payload;
};

}  // namespace once::relay
