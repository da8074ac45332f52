// What the WAL transport's claim source (claim/wal_stream.hpp) needs of the relay's ordinary
// database connection (wal/pg_wal_store.hpp): the messages' tag key, the slot's health, the
// snapshot, the key fences and the write-backs. Every call is a synchronous query: the relay
// makes it on its event loop (see the headers that call them for why that is acceptable).
#pragma once

#include "duration.hpp"
#include "message.hpp"
#include "wal/lsn.hpp"
#include "wal/slot_health.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace once::relay {

// A keyed stream message's order: the role whose order the key is, and its key_seq (uuid
// text; the message's format version 2).
struct WalKeyOrder {
    uint32_t key_owner = 0;
    std::string key_seq;
};

// WalStore::write_back could not take the key's lock bucket (held by a prepared transaction,
// or longer than the store waits): nothing was written, the connection is fine; try again later.
struct WalWriteBackBusy : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One message written back to the outbox table (once.wal_write_back's arguments).
struct WalWriteBack {
    const Message* message;
    int attempts;          // delivery attempts made (1: the one that failed; 0: none, behind its key)
    std::string error;     // why the sink refused it
    bool dead;             // refused for good: a dead letter at once
    WalKeyOrder order{};   // with a keyed message
    std::optional<Millis> retry_after{};   // the sink asked to wait this long (Retry-After)
};

// The relay's ordinary database side of the WAL transport.
class WalStore {
public:
    virtual ~WalStore() = default;
    // The key of the messages' tags (SELECT once.wal_secret()), or nullopt when the database
    // has no such function (the extension emits no tags). Throws when the database cannot be
    // asked.
    virtual std::optional<std::string> message_key() = 0;
    // SELECT once.wal_write_back(...), committed when it returns; a keyed one is fenced for
    // this relay's slot. Throws WalWriteBackBusy when the key's lock is held, else on failure.
    virtual void write_back(const WalWriteBack& w) = 0;
    // The slot and the server as PostgreSQL reports them (wal/slot_health.hpp). Throws when
    // the database cannot be asked.
    virtual wal::SlotReading read_slot() = 0;
    // Whether the outbox table holds a message of (key, owner) (once.wal_key_in_table).
    virtual bool key_in_table(const std::string& key, uint32_t owner) = 0;
    // once.wal_release_fences of this relay's slot up to `confirmed`, or (nullopt) up to the
    // slot's confirmed_flush_lsn as the server has it; returns how many of the slot's rows stay
    // fenced. Throws on failure.
    virtual int release_fences(std::optional<wal::Lsn> confirmed) = 0;
    // The (key, owner) of the rows this relay's slot still fences (once.wal_fenced_keys).
    virtual std::vector<std::pair<std::string, uint32_t>> fenced_keys() = 0;
    // pg_current_snapshot() as text (wal/commit_visibility.hpp). Throws on failure.
    virtual std::string current_snapshot() = 0;
};

}  // namespace once::relay
