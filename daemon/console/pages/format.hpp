// Formatting shared by the console's pages: capped counts, timestamps, ages, status badges and
// saga links. Pure functions of their arguments.
#pragma once

#include <string>

namespace once::console {

constexpr int kPage = 50;    // rows per list page
constexpr int kCap = 1000;   // counts stop here ("1000+"), as in once.console_*()

// A count as the database gives it: "1000+" from kCap on.
std::string capped(const std::string& v);
// A table cell with a count: empty is 0, capped as above.
std::string count_cell(const std::string& v);
// "2026-11-26 04:01:02.123456+00" -> "2026-11-26 04:01:02"
std::string ts(const std::string& t);
// "42 s", "5 min", "3 h", "2 d"; a negative age is 0 s.
std::string age_text(double seconds);
std::string status_badge(const std::string& st);
// A saga's page: a saga is (name, saga_id), ids being unique per definition only.
std::string saga_href(const std::string& name, const std::string& id);

}  // namespace once::console
