// The NATS side of the inbound relay (libnats): a durable JetStream pull consumer with
// explicit acks, created when missing, and a fetch thread that pulls while the relay has
// room (at most `max_held` messages fetched and not yet settled) and hands the messages to
// the relay's poll loop through an eventfd, as the NATS sink hands over its PubAcks. The
// same thread reads the consumer's state every second (ack floor, pending count) for the
// fence (inbound_lanes.hpp) and the metrics. Acks and progress notes are sent from the loop.
#pragma once

#include "inbound/inbound_message.hpp"
#include "inbound/inbound_source.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

typedef struct __natsMsg natsMsg;

namespace once::relay {

class SourceError : public std::runtime_error {
public:
    // transient: the servers did not answer in time or could not be reached (a cluster still
    // electing its leaders, a node restarting): trying again may succeed. Otherwise the
    // configuration is wrong (no such stream, a consumer of another kind) and it will not.
    explicit SourceError(const std::string& what, bool transient = false)
        : std::runtime_error(what), transient_(transient) {}
    bool transient() const { return transient_; }

private:
    bool transient_;
};

struct ConsumerState {
    uint64_t delivered_consumer_seq = 0;
    uint64_t delivered_stream_seq = 0;
    uint64_t ack_floor_stream_seq = 0;
    int64_t ack_pending = 0;
    uint64_t num_pending = 0;   // stream messages the consumer has not delivered yet
};

struct FetchedMessage {
    natsMsg* msg = nullptr;     // owned by whoever holds it; natsMsg_Destroy when done
    StreamMessage stream_message;
    uint64_t consumer_seq = 0;
    uint64_t num_delivered = 0; // JetStream's delivery count of this message
};

class JetStreamConsumer {
public:
    JetStreamConsumer(InboundSource source, Millis connect_timeout, Millis request_timeout);
    ~JetStreamConsumer();
    JetStreamConsumer(const JetStreamConsumer&) = delete;
    JetStreamConsumer& operator=(const JetStreamConsumer&) = delete;

    void set_token(std::string token) { source_.token = std::move(token); }
    bool has_credentials() const { return !source_.token.empty() || !source_.user.empty(); }
    // Connects, creates the consumer if missing (or checks it), binds a pull subscription.
    // Throws SourceError.
    void open(size_t max_held);
    // What --check-config does: connect and look the stream and the consumer up, changing
    // nothing. Returns a note for the operator: the consumer open() would create (empty when it
    // exists). Throws SourceError as open() does.
    std::string check();
    ConsumerState state();   // a fresh look (blocking request); throws SourceError
    // Starts the fetch thread; its first pull waits `first_fetch_after` (see inbound_relay.cpp).
    void start(Millis first_fetch_after);
    // While the lanes are fenced, messages above the fence wait in memory: the fetch thread
    // may then hold more than max_held (up to max_held + max(1000, 4 x max_held)) so that the
    // redelivery the fence waits for can still be fetched behind them.
    void set_fenced(bool fenced);
    int event_fd() const;
    std::vector<FetchedMessage> take();
    // `n` fetched messages were settled (acked) or dropped: room for as many more.
    void released(size_t n);
    void ack(natsMsg* m);
    void in_progress(natsMsg* m);
    bool connected() const;
    ConsumerState last_state() const;   // as the fetch thread last read it
    std::string last_error() const;
    const InboundSource& source() const { return source_; }
    void stop();

private:
    struct Impl;
    InboundSource source_;
    bool check_only_ = false;   // set by check(): open() stops after the lookup
    std::string check_note_;
    Millis connect_timeout_;
    Millis request_timeout_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace once::relay
