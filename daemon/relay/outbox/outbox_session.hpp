// The relay's session with the outbox's database, as the relay loop uses it: the LISTEN
// connection that also runs the leased claims' statements (LeaseStore) and the maintenance
// calls. SourceDb is the libpq one; the relay loop's unit tests use a fake.
#pragma once

#include "claim/lease_store.hpp"
#include "outage.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace once::relay {

class OutboxSession : public LeaseStore {
public:
    // Connects, checks pg_once, LISTENs. Throws DbLost (retry later) or std::runtime_error.
    virtual void connect() = 0;
    virtual void disconnect() = 0;
    virtual int socket() const = 0;                       // -1: nothing to poll
    virtual std::string server() const = 0;               // host:port, for logs
    virtual const std::string& redacted_conninfo() const = 0;
    // Reads pending input; true when at least one wake-up notification arrived.
    virtual bool consume_wakeups() = 0;
    // Maintenance under a lock only one relay holds: true if this one does.
    virtual bool try_maintenance_lock() = 0;
    virtual int64_t purge() = 0;                          // rows removed
    virtual void saga_tick() = 0;
    // Messages not yet delivered (ready, delayed, in flight, blocked), for the line that ends
    // an outage; nothing when it cannot tell (pg_once SQL before 0.3). With `wal_slot`, also
    // the WAL that slot holds back.
    virtual std::optional<WaitingCount> waiting_messages(const std::string& wal_slot = {}) = 0;
};

}  // namespace once::relay
