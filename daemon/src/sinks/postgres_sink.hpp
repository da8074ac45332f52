// postgresql://... (any libpq URI) — calls once.deliver(source, id, topic, payload, headers)
// in the target database, one transaction per message, pipelined over one connection (libpq
// pipeline mode with a sync after each call: many messages per network round trip, and a
// handler error rolls back only its own message). 'processed' and 'duplicate' are delivered;
// 'no_handler' is a retry with a clear reason (a later once.subscribe can still take it);
// 'poison' is dead. A handler error is recorded with once.inbox_failed and retried.
// Source = the URI's source= parameter, else the relay's --name.
#pragma once

#include "sinks/sink.hpp"

#include <chrono>
#include <deque>
#include <string>

typedef struct pg_conn PGconn;

namespace once::relay {

class PostgresSink final : public Sink {
public:
    PostgresSink(const Uri& uri, std::string default_source, Millis timeout, Millis connect_timeout);
    ~PostgresSink() override;
    const char* kind() const override { return "postgresql"; }
    std::string describe() const override { return description_; }
    void open() override;
    bool ready() override;
    void submit(uint64_t token, const Message& m) override;
    void poll_fds(std::vector<pollfd>& fds) override;
    int poll_timeout_ms() override;
    void process(const pollfd* fds, size_t nfds, std::vector<Outcome>& out) override;
    size_t in_flight() const override { return inflight_count_; }
    void abandon(std::vector<Outcome>& out) override;
    const std::string& source() const { return source_; }

private:
    struct Call {
        bool is_failure_record = false;   // once.inbox_failed: no outcome
        uint64_t token = 0;
        std::string id, topic;
        bool have_result = false;
        Outcome outcome;
    };
    void fail_all(const std::string& why, std::vector<Outcome>& out);
    void connect();
    void disconnect();

    std::string conninfo_;
    std::string description_;
    std::string source_;
    Millis timeout_;
    Millis connect_timeout_;
    PGconn* conn_ = nullptr;
    bool has_inbox_failed_ = false;
    bool want_write_ = false;
    std::deque<Call> calls_;
    size_t inflight_count_ = 0;
    std::vector<Outcome> immediate_;
    std::chrono::steady_clock::time_point retry_connect_at_{};
    int connect_failures_ = 0;
};

}  // namespace once::relay
