// nats://host:port[,host:port...]?stream=NAME[&subject_prefix=P][&create_stream=1]
// JetStream publish (libnats): subject = P + topic, header Nats-Msg-Id = message id so the
// stream drops a duplicate within its duplicate window, plus the message's own headers.
// Publishes are asynchronous with a bounded window; a message counts as delivered only when
// its PubAck arrived (a duplicate PubAck included). libnats calls back on its own thread: the
// callback only queues the result and writes to an eventfd the relay's poll loop watches.
// With a CloudEvents source, the ce-* attributes go as message headers (binary content mode
// of the CloudEvents NATS binding, sinks/cloudevents.hpp).
#pragma once

#include "sinks/sink.hpp"

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace once::relay {

struct NatsAckQueue;   // shared with the libnats callback thread

class NatsSink final : public Sink {
public:
    NatsSink(const Uri& uri, Millis timeout, Millis connect_timeout, size_t window);
    ~NatsSink() override;
    const char* kind() const override { return "nats"; }
    std::string describe() const override { return description_; }
    void open() override;
    // Looks the stream up but never creates it: a missing stream with create_stream=1 is
    // reported as what the relay would do at start.
    std::string check() override;
    bool ready() override;
    void submit(uint64_t token, const Message& m) override;
    void poll_fds(std::vector<pollfd>& fds) override;
    int poll_timeout_ms() override;
    void process(const pollfd* fds, size_t nfds, std::vector<Outcome>& out) override;
    size_t in_flight() const override { return pending_.size(); }
    void abandon(std::vector<Outcome>& out) override;

    const std::string& stream() const { return stream_; }
    const std::string& subject_prefix() const { return subject_prefix_; }
    // The URL names no user or token: authenticate with this token (from a file or credential).
    bool has_credentials() const { return !token_.empty() || !user_.empty(); }
    void set_token(std::string token) { token_ = std::move(token); }
    void set_cloudevents_source(std::string source) { ce_source_ = std::move(source); }

private:
    void close();
    std::string description_;
    std::vector<std::string> servers_;
    std::string user_, password_;
    std::string token_;      // nats://TOKEN@host: token authentication (a user without a password)
    std::string stream_;
    std::string subject_prefix_;
    bool create_stream_ = false;
    bool check_only_ = false;         // set by check(): open() must not create the stream
    std::string check_note_;
    std::string ce_source_;  // empty: no CloudEvents headers
    Millis timeout_;
    Millis connect_timeout_;
    size_t window_;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::shared_ptr<NatsAckQueue> queue_;
    struct Pending { uint64_t token; std::chrono::steady_clock::time_point started; };
    std::unordered_map<std::string, Pending> pending_;   // message id -> publish
    std::vector<Outcome> immediate_;                     // failed before reaching libnats
    std::string subject_;                                // the subject being built (its buffer reused)
};

}  // namespace once::relay
