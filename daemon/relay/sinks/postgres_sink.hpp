// postgresql://... (any libpq URI) — calls once.deliver(source, id, topic, payload, headers)
// in the target database, pipelined over one connection (libpq pipeline mode). The messages
// submitted together share one transaction (one commit, one WAL flush: per-message commits
// cap the sink at the disk's fsync rate); if one handler fails, the group rolls back and each
// message is retried in a transaction of its own, so a failing handler only affects its own
// message. URI options: ?tx=message forces one transaction per message; ?group=N caps a
// group (default 500). 'processed' and 'duplicate' are delivered;
// 'no_handler' is a retry with a clear reason (a later once.subscribe can still take it);
// 'poison' is dead. A handler error is recorded with once.inbox_failed (with a copy of the
// message where the database's pg_once keeps one, for once.inbox_retry) and retried.
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
    // The URI's own options (source=, tx=, group=) are taken out before it reaches libpq.
    PostgresSink(const Uri& uri, std::string default_source, Millis timeout, Millis connect_timeout);
    // The inbound webhook receiver's inbox (inbound/webhook_receiver): a libpq conninfo as
    // --db takes it, and message ids that are any text (webhook-id, a CloudEvent's id), given
    // to once.deliver's text overload. Grouping as with tx=group.
    struct TextIds {};
    PostgresSink(TextIds, std::string conninfo, std::string source, Millis timeout, Millis connect_timeout);
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
        uint64_t token = 0;
        std::string id, topic, payload, headers;
        bool has_headers = false;
        bool have_result = false;
        bool failed = false;          // error or skipped after an error in its group
        Outcome outcome;
    };
    // What was sent up to one pipeline sync: one transaction. A group of several messages
    // commits together; if any of them fails, PostgreSQL rolls the whole group back and each
    // member is sent again in a transaction of its own.
    struct Segment {
        bool failure_record = false;  // once.inbox_failed after a handler error: no outcome
        bool grouped = false;
        std::vector<Call> calls;
        size_t next = 0;              // index of the call whose result comes next
    };
    void send_segment(Segment seg, std::vector<Outcome>& out);
    void flush_pending(std::vector<Outcome>& out);
    void fail_all(const std::string& why, std::vector<Outcome>& out);
    void connect();
    void disconnect();

    std::string conninfo_;
    std::string description_;
    std::string source_;
    Millis timeout_;
    Millis connect_timeout_;
    size_t group_max_;                // messages per transaction, from tx=/group= (1: one each)
    bool text_ids_ = false;           // once.deliver(text, text, ...) instead of the uuid overload
    PGconn* conn_ = nullptr;
    bool has_inbox_failed_ = false;
    bool inbox_failed_keeps_copy_ = false;   // once.inbox_failed(..., topic, payload, headers) exists (0.3)
    bool want_write_ = false;
    std::vector<Call> pending_;       // submitted, not yet sent
    std::deque<Segment> segments_;    // sent, awaiting results, in order
    size_t inflight_count_ = 0;
    std::vector<Outcome> immediate_;
    std::chrono::steady_clock::time_point retry_connect_at_{};
    int connect_failures_ = 0;
};

}  // namespace once::relay
