// The WAL transport's ordinary (non-replication) database connection, with libpq: reads the
// messages' tag key (once.wal_secret()) when the stream opens, and writes back the messages
// the sink refused (once.wal_write_back), reads the slot's state before each stream open,
// pg_current_snapshot() when a claim cannot tell yet whether a message is visible, and for
// keyed messages asks whether the table holds their key and releases the write-backs' fences.
// Blocking, on the relay's loop: each call waits for its answer.
// Connects on first use and again after a failure. Keyed write-backs carry the slot: their
// fences are released by this slot's confirmation only (release_fences, fenced_keys).
// Waiting for a lock ends after kLockTimeout (WalWriteBackBusy).
#pragma once

#include "claim/wal_store.hpp"
#include "duration.hpp"

#include <libpq-fe.h>

#include <chrono>
#include <optional>
#include <string>

namespace once::relay {

// once.wal_write_back's record (once.wal_write_back_message) as the JSON object the statement
// turns into one with jsonb_populate_record: every field by name (NULL as null), payload and
// headers as the JSON they are; a keyed message's fence is `slot`'s.
std::string wal_write_back_record(const WalWriteBack& w, const std::string& slot);

class PgWalStore final : public WalStore {
public:
    // A call waits this long at most for a lock (the key's lock bucket, of a write-back).
    static constexpr std::chrono::milliseconds kLockTimeout{200};
    // `slot`: the replication slot whose fences this relay writes and releases.
    PgWalStore(std::string conninfo, std::string name, Millis connect_timeout, std::string slot);
    ~PgWalStore() override;
    PgWalStore(const PgWalStore&) = delete;
    PgWalStore& operator=(const PgWalStore&) = delete;

    std::optional<std::string> message_key() override;
    void write_back(const WalWriteBack& w) override;
    wal::SlotReading read_slot() override;
    bool key_in_table(const std::string& key, uint32_t owner) override;
    int release_fences(std::optional<wal::Lsn> confirmed) override;
    std::vector<std::pair<std::string, uint32_t>> fenced_keys() override;
    std::string current_snapshot() override;

private:
    PGconn* connection();
    [[noreturn]] void fail(const std::string& what);

    std::string conninfo_;
    std::string name_;
    Millis connect_timeout_;
    std::string slot_;
    PGconn* conn_ = nullptr;
};

}  // namespace once::relay
