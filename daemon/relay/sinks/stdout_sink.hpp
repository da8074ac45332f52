// stdout: one JSON line per message: {"id","topic","key","headers","payload","attempt"}.
// For debugging and for pipes (once-relay ... --sink stdout: | jq). A message counts as
// delivered once its line is written and flushed.
#pragma once

#include "sinks/sink.hpp"

#include <cstdio>

namespace once::relay {

class StdoutSink final : public Sink {
public:
    explicit StdoutSink(std::FILE* out = stdout) : out_(out) {}
    const char* kind() const override { return "stdout"; }
    std::string describe() const override { return "stdout:"; }
    void open() override {}
    bool ready() override { return !broken_; }
    void submit(uint64_t token, const Message& m) override;
    void poll_fds(std::vector<pollfd>&) override {}
    int poll_timeout_ms() override { return pending_.empty() ? -1 : 0; }
    void process(const pollfd*, size_t, std::vector<Outcome>& out) override;
    size_t in_flight() const override { return pending_.size(); }
    void abandon(std::vector<Outcome>& out) override;

    static std::string format_line(const Message& m);

private:
    std::FILE* out_;
    bool broken_ = false;
    std::vector<uint64_t> pending_;
};

}  // namespace once::relay
