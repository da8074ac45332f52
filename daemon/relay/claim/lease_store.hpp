// The outbox's lease statements, as the leased claim mode uses them: what SourceDb (the
// LISTEN connection) does for it, behind an interface so that LeasedClaims is unit-tested
// against a fake outbox.
#pragma once

#include "duration.hpp"
#include "message.hpp"

#include <optional>
#include <string>
#include <vector>

namespace once::relay {

class LeaseStore {
public:
    virtual ~LeaseStore() = default;
    virtual bool connected() const = 0;
    // once.claim, waited for. Throws DbLost, or std::runtime_error when the server refused.
    virtual std::vector<Message> claim(int batch, Millis lease, const std::vector<std::string>& topics) = 0;
    // How many the outbox accepted (a lease taken over by another relay is refused).
    virtual int64_t ack(const std::vector<std::string>& ids) = 0;
    // The outbox's verdict: "retry", "dead" (attempts exhausted) or "stale".
    virtual std::string nack(const std::string& id, const std::string& error, std::optional<Millis> retry_after) = 0;
    virtual void dead(const std::string& id, const std::string& error) = 0;
    virtual void extend(const std::vector<std::string>& ids, Millis lease) = 0;
};

}  // namespace once::relay
