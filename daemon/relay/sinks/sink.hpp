// A sink receives messages and reports, asynchronously, whether each one arrived. All sinks
// are driven by the relay's single poll() loop: submit() never blocks for a network round
// trip, poll_fds()/poll_timeout() say what to wait for, process() makes progress and collects
// the outcomes. Threads inside a client library (libnats) hand their results over through an
// eventfd, so the loop still owns all state.
#pragma once

#include "claim/claim_mode.hpp"
#include "message.hpp"

#include <poll.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace once::relay {

struct Options;
struct Uri;

// A sink that cannot work with the given settings (bad URI, unreachable at start, stream
// missing). The message is for the operator; it never contains a password.
class SinkError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Sink {
public:
    virtual ~Sink() = default;

    // "http", "nats", ...; and the URI with secrets redacted, for logs.
    virtual const char* kind() const = 0;
    virtual std::string describe() const = 0;
    // The claim mode --claim-mode auto picks for this sink. Locked suits sinks that answer
    // within moments (a locked batch is one open transaction until the sink has answered);
    // a sink whose answers may take as long as a lease asks for leased claims.
    virtual ClaimMode preferred_claim_mode() const { return ClaimMode::locked; }

    // Connect and check the destination (stream exists, database has once.deliver). Throws
    // SinkError when it cannot; the relay exits at start, retries later.
    virtual void open() = 0;
    // What --check-config does: connect and check like open(), changing nothing at the
    // destination. Returns a note for the operator (empty: nothing to say).
    virtual std::string check() { open(); return {}; }
    // True while the sink believes it can deliver. The relay does not claim while false. A
    // sink that keeps a connection may reconnect in here, blocking the loop up to its connect
    // timeout (the PostgreSQL sink does).
    virtual bool ready() = 0;
    // True when ready() follows a connection the sink keeps (NATS, PostgreSQL): ready() true
    // again means the sink is back. False when ready() only pauses claims after failures
    // (HTTP): then only a delivery shows the receiver is back.
    virtual bool ready_tracks_connection() const { return true; }

    // Start delivering m. The outcome comes back from process() with the same token.
    virtual void submit(uint64_t token, const Message& m) = 0;
    // Appends the descriptors the sink waits on.
    virtual void poll_fds(std::vector<pollfd>& fds) = 0;
    // Upper bound for the next poll() timeout in ms (-1: none).
    virtual int poll_timeout_ms() { return -1; }
    // Non-blocking progress; appends finished deliveries. `fds` are the pollfd entries this
    // sink added (with revents filled in).
    virtual void process(const pollfd* fds, size_t nfds, std::vector<Outcome>& out) = 0;
    // Publishes still waiting for an answer.
    virtual size_t in_flight() const = 0;
    // Give up on everything in flight (shutdown or database loss after the drain bound):
    // each becomes a retry outcome (the sink may still have received it; dedupe handles that).
    virtual void abandon(std::vector<Outcome>& out) = 0;
};

// Builds the sink for the URI in options.sink. Throws SinkError for an unknown scheme or bad
// parameters (nothing is contacted yet).
std::unique_ptr<Sink> make_sink(const Options& options);

}  // namespace once::relay
