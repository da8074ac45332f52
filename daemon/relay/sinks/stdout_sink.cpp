#include "sinks/stdout_sink.hpp"

#include "core/json.hpp"

#include <cerrno>
#include <cstring>

namespace once::relay {
namespace {

// "..." with minimal JSON escaping, the same as pg_once's canonical form.
std::string json_quote(std::string_view s) {
    std::string out;
    once::append_json_string(out, s);
    return out;
}

}  // namespace

std::string StdoutSink::format_line(const Message& m) {
    std::string line = "{\"id\":" + json_quote(m.id) + ",\"topic\":" + json_quote(m.topic) +
                       ",\"key\":" + (m.has_key ? json_quote(m.key) : std::string("null")) +
                       ",\"attempt\":" + std::to_string(m.attempt) +
                       ",\"headers\":" + (m.headers.empty() ? std::string("null") : m.headers) +
                       ",\"payload\":" + (m.payload.empty() ? std::string("null") : m.payload) + "}\n";
    return line;
}

void StdoutSink::submit(uint64_t token, const Message& m) {
    std::string line = format_line(m);
    if (!broken_ && std::fwrite(line.data(), 1, line.size(), out_) != line.size()) broken_ = true;
    pending_.push_back(token);
}

void StdoutSink::process(const pollfd*, size_t, std::vector<Outcome>& out) {
    if (pending_.empty()) return;
    if (!broken_ && std::fflush(out_) != 0) broken_ = true;
    for (uint64_t t : pending_) {
        Outcome o;
        o.token = t;
        if (broken_) {
            o.verdict = Verdict::retry;
            o.error = std::string("stdout: write failed: ") + std::strerror(errno);
        } else {
            o.verdict = Verdict::delivered;
        }
        out.push_back(std::move(o));
    }
    pending_.clear();
}

void StdoutSink::abandon(std::vector<Outcome>& out) { process(nullptr, 0, out); }

}  // namespace once::relay
