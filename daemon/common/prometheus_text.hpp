// Prometheus text exposition: the value and label formats both daemons' /metrics use.
#pragma once

#include <string>

namespace once::relay {

// A sample value in Prometheus text: integers exactly (a Unix time in seconds, a count),
// anything else with the fewest digits that read back as the same double; NaN, +Inf, -Inf.
std::string format_metric_value(double v);
// A label value with \, " and newlines escaped.
std::string escape_label_value(const std::string& v);

}  // namespace once::relay
