// Fakes shared by the daemon's unit tests: a sink that answers when and in whatever order
// the test says, a locked lane's transaction, and messages made in one line.
#pragma once

#include "message.hpp"
#include "outbox/locked_tx.hpp"
#include "sinks/sink.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace once::relay::testing {

class FakeSink final : public Sink {
public:
    const char* kind() const override { return "fake"; }
    std::string describe() const override { return "fake:"; }
    void open() override {}
    bool ready() override { return true; }
    void submit(uint64_t token, const Message& m) override {
        submitted.push_back(m.id);
        open_[m.id] = token;
    }
    void poll_fds(std::vector<pollfd>&) override {}
    void process(const pollfd*, size_t, std::vector<Outcome>&) override {}
    size_t in_flight() const override { return open_.size(); }
    void abandon(std::vector<Outcome>& out) override {
        for (auto& [id, token] : open_) out.push_back(Outcome{token, Verdict::retry, "abandoned", std::nullopt});
        open_.clear();
    }
    // The sink's answer for message `id`.
    Outcome answer(const std::string& id, Verdict v = Verdict::delivered, std::string error = "",
                   std::optional<Millis> retry_after = std::nullopt) {
        auto it = open_.find(id);
        EXPECT_NE(it, open_.end()) << id << " is not in flight";
        Outcome o{it->second, v, std::move(error), retry_after};
        open_.erase(it);
        return o;
    }
    std::vector<std::string> submitted;

private:
    std::map<std::string, uint64_t> open_;
};

inline Message msg(const std::string& id, const char* key = nullptr) {
    Message m;
    m.id = id;
    m.topic = "t";
    m.payload = "{}";
    if (key) { m.key = key; m.has_key = true; }
    return m;
}

// The seam of the fake transactions: a LockedTx with no socket, whose claims and settlements
// are answered at once by the blocking claim() and settle_and_commit() a fake defines.
class BlockingLockedTx : public LockedTx {
public:
    bool connect() override { return true; }   // connected from the start
    virtual std::vector<Message> claim(int batch, const std::vector<std::string>& topics) = 0;
    virtual SettleReport settle_and_commit(const Batch::Settlement& s) = 0;

    void start_claim(int batch, const std::vector<std::string>& topics) override { started_ = claim(batch, topics); }
    bool claim_ready() override { return true; }
    std::vector<Message> finish_claim() override { return std::move(started_); }
    int socket() const override { return -1; }
    void start_settle(const Batch::Settlement& s) override {
        settle_failed_ = nullptr;
        try {
            settled_ = settle_and_commit(s);
        } catch (...) {
            settle_failed_ = std::current_exception();
        }
    }
    bool settle_ready() override { return true; }
    SettleReport finish_settle() override {
        if (settle_failed_) std::rethrow_exception(std::exchange(settle_failed_, nullptr));
        return std::move(settled_);
    }

private:
    std::vector<Message> started_;
    SettleReport settled_;
    std::exception_ptr settle_failed_;
};

// start_settle_locked and finish_settle_locked in one call, as the tests drive them.
inline LockedSettle settle_locked(Batch& b, LockedTx& tx) {
    std::optional<Batch::Settlement> s = start_settle_locked(b, tx);
    if (!s) return LockedSettle{};
    return finish_settle_locked(b, tx, std::move(*s));
}

// A lane's transaction whose claims and settlements are answered when the test says so.
struct TxLog {
    int claims = 0, commits = 0, rollbacks = 0, disconnects = 0;
    std::vector<std::string> acks, nacks;
    std::function<void()> on_commit;   // after each commit (the relay loop test stops there)
};

class FakeTx final : public BlockingLockedTx {
public:
    FakeTx(TxLog& log, std::deque<std::vector<Message>>& answers, bool has_claim_locked)
        : log_(log), answers_(answers), has_claim_locked_(has_claim_locked) {}
    bool connect() override { up_ = true; return has_claim_locked_; }
    std::vector<Message> claim(int, const std::vector<std::string>&) override {
        ++log_.claims;
        if (answers_.empty()) return {};
        auto m = std::move(answers_.front());
        answers_.pop_front();
        return m;
    }
    SettleReport settle_and_commit(const Batch::Settlement& s) override {
        ++log_.commits;
        log_.acks.insert(log_.acks.end(), s.acks.begin(), s.acks.end());
        for (auto* e : s.nacks) log_.nacks.push_back(e->msg.id);
        SettleReport r;
        r.acked = static_cast<int64_t>(s.acks.size());
        r.nack_verdicts.assign(s.nacks.size(), "retry");
        if (log_.on_commit) log_.on_commit();
        return r;
    }
    void rollback() noexcept override { ++log_.rollbacks; }
    bool connected() const override { return up_; }
    void disconnect() override { up_ = false; ++log_.disconnects; }

private:
    TxLog& log_;
    std::deque<std::vector<Message>>& answers_;
    bool has_claim_locked_;
    bool up_ = false;
};

}  // namespace once::relay::testing
