#include "sinks/http_sink.hpp"

#include "core/backoff.hpp"
#include "core/content_type.hpp"
#include "sinks/cloudevents.hpp"
#include "sinks/http_status.hpp"
#include "sinks/producer_headers.hpp"
#include "uri.hpp"

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include <random>

namespace once::relay {

using Clock = std::chrono::steady_clock;

struct HttpSink::Request {
    uint64_t token = 0;
    std::string id;
    std::string body;
    curl_slist* headers = nullptr;
    std::string response;
    std::string retry_after;
    char errbuf[CURL_ERROR_SIZE] = {0};
    Clock::time_point started;
};

namespace {

int socket_cb(CURL*, curl_socket_t s, int what, void* userp, void*) {
    static_cast<HttpSink*>(userp)->on_socket(s, what);
    return 0;
}

int timer_cb(CURLM*, long timeout_ms, void* userp) {
    static_cast<HttpSink*>(userp)->on_timer(timeout_ms);
    return 0;
}

size_t write_cb(char* ptr, size_t size, size_t nmemb, void* userdata) {
    auto* body = static_cast<std::string*>(userdata);
    size_t n = size * nmemb;
    if (body->size() < 4096) body->append(ptr, std::min(n, 4096 - body->size()));
    return n;
}

size_t header_cb(char* buffer, size_t size, size_t nitems, void* userdata) {
    size_t n = size * nitems;
    std::string line(buffer, n);
    static const std::string name = "retry-after:";
    if (line.size() > name.size()) {
        bool match = true;
        for (size_t i = 0; i < name.size() && match; ++i) match = std::tolower(static_cast<unsigned char>(line[i])) == name[i];
        if (match) *static_cast<std::string*>(userdata) = line.substr(name.size());
    }
    return n;
}

}  // namespace

HttpSink::HttpSink(std::string url, Millis timeout, Millis connect_timeout, size_t max_connections)
    : url_(std::move(url)), timeout_(timeout), connect_timeout_(connect_timeout), max_connections_(max_connections) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    multi_ = curl_multi_init();
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(max_connections_));
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(max_connections_));
    curl_multi_setopt(multi_, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
}

HttpSink::~HttpSink() {
    for (auto& [easy, req] : requests_) {
        curl_multi_remove_handle(multi_, easy);
        curl_easy_cleanup(easy);
        curl_slist_free_all(req->headers);
        delete req;
    }
    for (CURL* e : idle_) curl_easy_cleanup(e);
    curl_multi_cleanup(multi_);
    curl_global_cleanup();
}

std::string HttpSink::describe() const { return redact_uri(url_); }

void HttpSink::open() {
    // Reach the server once (TCP + TLS handshake, no request) so a wrong host or port fails
    // at start with a clear message rather than as a stream of retries.
    CURL* e = curl_easy_init();
    char err[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(e, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_timeout_.count()));
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, err);
    CURLcode rc = curl_easy_perform(e);
    curl_easy_cleanup(e);
    if (rc != CURLE_OK)
        throw SinkError("cannot reach the HTTP sink " + describe() + ": " + (err[0] ? err : curl_easy_strerror(rc)));
}

bool HttpSink::ready() { return Clock::now() >= down_until_; }

void HttpSink::on_socket(int fd, int what) {
    if (what == CURL_POLL_REMOVE) { sockets_.erase(fd); return; }
    short ev = 0;
    if (what & CURL_POLL_IN) ev |= POLLIN;
    if (what & CURL_POLL_OUT) ev |= POLLOUT;
    sockets_[fd] = ev;
}

void HttpSink::on_timer(long timeout_ms) {
    if (timeout_ms < 0) { timer_armed_ = false; return; }
    timer_armed_ = true;
    timer_deadline_ = Clock::now() + std::chrono::milliseconds(timeout_ms);
}

void HttpSink::submit(uint64_t token, const Message& m) {
    CURL* e;
    if (!idle_.empty()) { e = idle_.back(); idle_.pop_back(); curl_easy_reset(e); }
    else e = curl_easy_init();
    auto* req = new Request;
    req->token = token;
    req->id = m.id;
    req->body = body_ == HttpBody::envelope ? webhook_envelope(m) : once::delivered_body(m.payload, m.content_type);
    req->started = Clock::now();
    // Only headers the shared rule allows: a producer must not set Host, Content-Length,
    // Idempotency-Key, X-Once-* or any other transport or relay header.
    std::vector<std::pair<std::string, std::string>> extra = producer_headers(m);
    auto add = [&](const std::string& line) { req->headers = curl_slist_append(req->headers, line.c_str()); };
    // The message's content type labels its body; an envelope is JSON whatever it carries.
    // (once.send refuses a content type with control characters: core/content_type.hpp)
    add("Content-Type: " + (body_ == HttpBody::payload && !m.content_type.empty() ? m.content_type
                                                                             : std::string("application/json")));
    add("Idempotency-Key: " + m.id);
    add("X-Once-Topic: " + m.topic);
    if (m.has_key && m.key.find_first_of("\r\n") == std::string::npos) add("X-Once-Key: " + m.key);
    add("X-Once-Attempt: " + std::to_string(m.attempt));
    add("Expect:");   // no 100-continue round trip for larger bodies
    if (!webhook_keys_.empty()) {
        // Signed at each attempt: a retry carries a fresh timestamp, the same webhook-id.
        int64_t ts = static_cast<int64_t>(std::time(nullptr));
        add("webhook-id: " + m.id);
        add("webhook-timestamp: " + std::to_string(ts));
        add("webhook-signature: " + webhook_signature(webhook_keys_, m.id, ts, req->body));
    }
    if (!ce_source_.empty())
        for (const auto& [k, v] : cloudevents_headers(m, ce_source_, CloudEventsBinding::http)) add(k + ": " + v);
    for (const auto& [k, v] : extra) add(k + ": " + v);
    curl_easy_setopt(e, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, static_cast<long>(req->body.size()));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, req->headers);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_.count()));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_timeout_.count()));
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "once-relay/" ONCE_VERSION);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &req->response);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &req->retry_after);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, req->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, req);
    requests_[e] = req;
    curl_multi_add_handle(multi_, e);
}

void HttpSink::poll_fds(std::vector<pollfd>& fds) {
    for (const auto& [fd, ev] : sockets_) fds.push_back(pollfd{fd, ev, 0});
}

int HttpSink::poll_timeout_ms() {
    if (!timer_armed_) return requests_.empty() ? -1 : 1000;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(timer_deadline_ - Clock::now()).count();
    return left < 0 ? 0 : static_cast<int>(left);
}

void HttpSink::process(const pollfd* fds, size_t nfds, std::vector<Outcome>& out) {
    int running = 0;
    for (size_t i = 0; i < nfds; ++i) {
        if (!fds[i].revents) continue;
        int flags = 0;
        if (fds[i].revents & POLLIN) flags |= CURL_CSELECT_IN;
        if (fds[i].revents & POLLOUT) flags |= CURL_CSELECT_OUT;
        if (fds[i].revents & (POLLERR | POLLHUP | POLLNVAL)) flags |= CURL_CSELECT_ERR;
        curl_multi_socket_action(multi_, fds[i].fd, flags, &running);
    }
    if (timer_armed_ && Clock::now() >= timer_deadline_) {
        timer_armed_ = false;
        curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
    }
    collect(out);
}

void HttpSink::collect(std::vector<Outcome>& out) {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
        if (msg->msg != CURLMSG_DONE) continue;
        finish(msg->easy_handle, msg->data.result, out);
    }
}

void HttpSink::finish(CURL* e, int curl_code, std::vector<Outcome>& out) {
    auto it = requests_.find(e);
    if (it == requests_.end()) return;
    Request* req = it->second;
    requests_.erase(it);
    curl_multi_remove_handle(multi_, e);
    Outcome o;
    o.token = req->token;
    if (curl_code != CURLE_OK) {
        o.verdict = Verdict::retry;
        o.error = std::string("HTTP request failed: ") +
                  (req->errbuf[0] ? req->errbuf : curl_easy_strerror(static_cast<CURLcode>(curl_code)));
        ++consecutive_network_errors_;
        // Pause claiming briefly so a dead receiver does not burn through attempts.
        BackoffPolicy p{200, 5000};
        int64_t ms = backoff_window_ms(p, std::min(consecutive_network_errors_, 10));
        down_until_ = Clock::now() + std::chrono::milliseconds(ms);
    } else {
        consecutive_network_errors_ = 0;
        long status = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        o.verdict = classify_http_status(status);
        if (o.verdict != Verdict::delivered) {
            o.error = "HTTP " + std::to_string(status);
            std::string excerpt = body_excerpt(req->response);
            if (!excerpt.empty()) o.error += ": " + excerpt;
            if (o.verdict == Verdict::retry) o.retry_after = parse_retry_after(req->retry_after, std::time(nullptr));
        }
    }
    out.push_back(std::move(o));
    curl_slist_free_all(req->headers);
    delete req;
    if (idle_.size() < 64) idle_.push_back(e);
    else curl_easy_cleanup(e);
}

void HttpSink::abandon(std::vector<Outcome>& out) {
    // Not a network failure: keep the receiver's health as it was.
    auto down_until = down_until_;
    int errors = consecutive_network_errors_;
    size_t first = out.size();
    while (!requests_.empty()) finish(requests_.begin()->first, CURLE_ABORTED_BY_CALLBACK, out);
    for (size_t i = first; i < out.size(); ++i) out[i].error = "HTTP request abandoned (relay stopping or database lost)";
    down_until_ = down_until;
    consecutive_network_errors_ = errors;
}

}  // namespace once::relay
