// Fakes shared by the daemon's unit tests: a sink that answers when and in whatever order
// the test says, and messages made in one line.
#pragma once

#include "message.hpp"
#include "sinks/sink.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
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

}  // namespace once::relay::testing
