// The overview's send and ack rates: once-console samples once.console_outbox_counters()
// (rows inserted into / deleted from once.outbox, from pg_stat_all_tables) every
// --rate-interval and keeps the last samples; a chart is the per-second rate between
// consecutive samples, drawn as a small inline SVG (no script, nothing fetched).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace once::console {

struct CounterSample {
    double at = 0;          // seconds (epoch)
    int64_t inserted = 0;   // rows inserted into once.outbox so far (sends)
    int64_t deleted = 0;    // rows deleted from once.outbox so far (acks)
};

// Per-second rates between consecutive samples. A counter that went down (statistics reset,
// server restart) gives no rate for that interval.
struct Rates {
    std::vector<double> at;      // end of each interval
    std::vector<double> sent, acked;
};

class RateHistory {
public:
    explicit RateHistory(std::size_t keep = 61) : keep_(keep) {}
    void add(const CounterSample& s);
    Rates rates() const;
    std::size_t size() const;
    std::size_t capacity() const { return keep_; }

private:
    std::size_t keep_;
    mutable std::mutex mu_;
    std::deque<CounterSample> samples_;
};

// An SVG sparkline of `values` (a bar per value, the largest one full height), with the last
// value and the maximum as text. `id` is the svg element's id. Empty values: a "no data yet"
// note instead.
std::string sparkline_svg(const std::string& id, const std::vector<double>& values, const std::string& unit);

}  // namespace once::console
