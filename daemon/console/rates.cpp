#include "rates.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace once::console {

void RateHistory::add(const CounterSample& s) {
    std::lock_guard<std::mutex> lock(mu_);
    samples_.push_back(s);
    while (samples_.size() > keep_) samples_.pop_front();
}

std::size_t RateHistory::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return samples_.size();
}

Rates RateHistory::rates() const {
    std::lock_guard<std::mutex> lock(mu_);
    Rates r;
    for (std::size_t i = 1; i < samples_.size(); ++i) {
        const CounterSample& a = samples_[i - 1];
        const CounterSample& b = samples_[i];
        double dt = b.at - a.at;
        if (dt <= 0 || b.inserted < a.inserted || b.deleted < a.deleted) continue;
        r.at.push_back(b.at);
        r.sent.push_back(static_cast<double>(b.inserted - a.inserted) / dt);
        r.acked.push_back(static_cast<double>(b.deleted - a.deleted) / dt);
    }
    return r;
}

namespace {

std::string number(double v) {
    char buf[32];
    if (v >= 100 || v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
    else std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

}  // namespace

std::string sparkline_svg(const std::string& id, const std::vector<double>& values, const std::string& unit) {
    if (values.empty())
        return "<span class=muted id=\"" + id + "\">no data yet (sampled every few seconds)</span>";
    const int width = 240, height = 40, n = static_cast<int>(values.size());
    const double max = std::max(*std::max_element(values.begin(), values.end()), 0.0);
    const double bar = static_cast<double>(width) / n;
    std::ostringstream s;
    s << "<svg id=\"" << id << "\" class=spark width=" << width << " height=" << height << " viewBox=\"0 0 " << width << ' '
      << height << "\" role=img aria-label=\"" << id << "\"><rect width=" << width << " height=" << height
      << " fill=\"#f4f6f8\"/>";
    for (int i = 0; i < n; ++i) {
        double h = max > 0 ? std::round(values[i] / max * (height - 2)) : 0;
        if (values[i] > 0 && h < 1) h = 1;
        s << "<rect x=" << number(i * bar) << " y=" << (height - h) << " width=" << number(std::max(bar - 1, 1.0))
          << " height=" << h << " fill=\"#3b6ea5\"/>";
    }
    s << "</svg> <span class=spark-text>" << number(values.back()) << ' ' << unit << " now, max " << number(max) << "</span>";
    return s.str();
}

}  // namespace once::console
