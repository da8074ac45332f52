// Fakes of the WAL transport's two connections for the unit tests: a replication stream that
// hands out the events the test queued, one group per read, and records what was confirmed;
// a database side that records write-backs and can be made to fail.
#pragma once

#include "claim/wal_stream.hpp"
#include "wal/wal_reader.hpp"

#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

namespace once::relay::testing {

struct WalLog {
    std::deque<std::vector<wal::WalEvent>> reads;   // one group per read_available
    wal::Lsn idle = 0;                              // idle_position()
    bool fail_next_read = false;                    // read_available throws once
    int slot_in_use = 0;                            // so many opens throw wal::SlotInUse first
    int opens = 0;
    std::vector<std::optional<std::string>> keys;   // the message key of each open
    wal::Lsn confirmed = 0;
    std::vector<wal::Lsn> statuses;                 // the flush position of each status update sent
    std::function<void(wal::Lsn)> on_status;        // after each status update
};

class FakeWalReader final : public wal::WalReader {
public:
    explicit FakeWalReader(WalLog& log) : log_(log) {}
    void open(const std::optional<std::string>& key) override {
        if (log_.slot_in_use > 0) {
            --log_.slot_in_use;
            throw wal::SlotInUse("replication slot \"s\" is active for PID 42");
        }
        open_ = true;
        ++log_.opens;
        log_.keys.push_back(key);
    }
    bool is_open() const override { return open_; }
    int socket() const override { return -1; }
    bool read_available(std::vector<wal::WalEvent>& events) override {
        if (log_.fail_next_read) {
            log_.fail_next_read = false;
            open_ = false;
            throw std::runtime_error("replication connection lost");
        }
        if (!log_.reads.empty()) {
            auto group = std::move(log_.reads.front());
            log_.reads.pop_front();
            events.insert(events.end(), group.begin(), group.end());
        }
        return true;
    }
    void confirm(wal::Lsn f) override { if (f > log_.confirmed) log_.confirmed = f; }
    void send_status(bool = false) override {
        log_.statuses.push_back(log_.confirmed);
        if (log_.on_status) log_.on_status(log_.confirmed);
    }
    wal::Lsn idle_position() const override { return log_.idle; }
    void close() override {
        if (open_) send_status();
        open_ = false;
    }

private:
    WalLog& log_;
    bool open_ = false;
};

struct StoreLog {
    std::optional<std::string> key = std::string(32, 'k');   // nullopt: a database without once.wal_secret()
    std::vector<std::string> written_back;          // "id dead|retry attempts error"
    std::vector<std::string> written_back_orders;   // "key owner key_seq" of keyed write-backs
    std::vector<std::optional<Millis>> written_back_retry_after;   // per write-back
    int fail_writes = 0;                            // so many write-backs throw first
    std::deque<std::string> snapshots;              // current_snapshot() answers, one each; then "1000:1000:"
    int snapshot_reads = 0;
    bool busy = false;                              // keyed write-backs throw WalWriteBackBusy (the key's lock held)
    int busy_tries = 0;                             // write-backs that found the key's lock held
    wal::SlotReading slot = [] {                    // what read_slot() answers: a usable slot on 15
        wal::SlotReading s;
        s.slot = "once_relay";
        s.exists = true;
        s.wal_status = "reserved";
        s.server_version = 150000;
        return s;
    }();
    int slot_reads = 0;
    std::set<std::pair<std::string, uint32_t>> in_table;   // keys the table holds (key_in_table)
    int key_checks = 0;
    std::vector<std::optional<wal::Lsn>> releases;  // release_fences calls (nullopt: the slot's position)
    int fenced = 0;                                 // what release_fences returns
    std::vector<std::pair<std::string, uint32_t>> fenced_keys;
};

class FakeWalStore final : public WalStore {
public:
    explicit FakeWalStore(StoreLog& log) : log_(log) {}
    std::optional<std::string> message_key() override { return log_.key; }
    wal::SlotReading read_slot() override {
        ++log_.slot_reads;
        return log_.slot;
    }
    std::string current_snapshot() override {
        ++log_.snapshot_reads;
        if (log_.snapshots.empty()) return "1000:1000:";   // (test messages' xids are below: visible)
        std::string s = log_.snapshots.front();
        log_.snapshots.pop_front();
        if (s == "throw") throw std::runtime_error("database down");
        return s;
    }
    void write_back(const WalWriteBack& w) override {
        if (log_.fail_writes > 0) {
            --log_.fail_writes;
            throw std::runtime_error("database down");
        }
        if (log_.busy && w.message->has_key) {
            ++log_.busy_tries;
            throw WalWriteBackBusy("the key's lock bucket is held by prepared transaction \"gid\"");
        }
        log_.written_back.push_back(w.message->id + (w.dead ? " dead " : " retry ") + std::to_string(w.attempts) + " " +
                                    w.error);
        log_.written_back_retry_after.push_back(w.retry_after);
        if (w.message->has_key) {
            log_.written_back_orders.push_back(w.message->key + " " + std::to_string(w.order.key_owner) + " " +
                                               w.order.key_seq);
            log_.in_table.insert({w.message->key, w.order.key_owner});
        }
    }
    bool key_in_table(const std::string& key, uint32_t owner) override {
        ++log_.key_checks;
        return log_.in_table.count({key, owner}) > 0;
    }
    int release_fences(std::optional<wal::Lsn> confirmed) override {
        log_.releases.push_back(confirmed);
        return log_.fenced;
    }
    std::vector<std::pair<std::string, uint32_t>> fenced_keys() override { return log_.fenced_keys; }

private:
    StoreLog& log_;
};

// An OutboxMessageEvent of a message with id byte `id`, in the transaction committed at `commit`.
inline wal::WalEvent wal_message(uint8_t id, wal::Lsn commit, const char* topic = "t", int64_t commit_time = 0) {
    once::WalMessage m;
    m.id.fill(id);
    m.created_at_us = 1'700'000'000'000'000;
    m.topic = topic;
    m.payload = "{\"n\":" + std::to_string(id) + "}";
    return wal::OutboxMessageEvent{commit, commit - 8, m, commit_time, id};   // (its transaction's xid: the id)
}
// The same with a key of owner `owner`; its key_seq is the id byte repeated.
inline wal::WalEvent wal_keyed(uint8_t id, wal::Lsn commit, const char* key, uint32_t owner = 10) {
    wal::WalEvent ev = wal_message(id, commit);
    once::WalMessage& m = std::get<wal::OutboxMessageEvent>(ev).message;
    m.key = key;
    m.key_owner = owner;
    m.key_seq.fill(id);
    return ev;
}
inline wal::WalEvent wal_end(wal::Lsn commit, wal::Lsn end) { return wal::TransactionEndEvent{commit, end, 0, 0}; }

// The uuid text of id byte `id` (as relay_message makes it).
inline std::string wal_id(uint8_t id) {
    once::Uuid u;
    u.fill(id);
    return once::uuid_to_string(u);
}

}  // namespace once::relay::testing
