#include "pages/retrying.hpp"

#include "html.hpp"
#include "percent_encoding.hpp"
#include "pages/format.hpp"

#include <sstream>

namespace once::console {

RetryingModel load_retrying(Tx& tx, const std::string& topic, const std::string& after) {
    auto rows = tx.query("SELECT * FROM once.console_retrying($1, $2::uuid, $3)",
                         {null_if_empty(topic), is_uuid(after) ? std::optional<std::string>(after) : std::nullopt,
                          std::to_string(kPage)});
    RetryingModel m;
    m.topic = topic;
    for (int i = 0; i < rows.size(); ++i)
        m.rows.push_back({rows(i, "id"), rows(i, "topic"), rows(i, "key"), rows(i, "attempt"), rows(i, "last_error"),
                          rows(i, "next_try"), rows(i, "relay"), rows(i, "pos"), rows(i, "in_flight") == "t"});
    return m;
}

std::string render_retrying(const RetryingModel& m) {
    std::ostringstream b;
    b << "<form class=filters method=get action=\"/retrying\">Topic <input name=topic id=r-topic value=\"" << esc(m.topic)
      << "\"> <button type=submit id=filter>Filter</button> <a href=\"/retrying\">clear</a></form><br>"
         "<table id=retrying><tr><th>id</th><th>topic</th><th>key</th><th>attempts</th><th>last error</th>"
         "<th>next try</th></tr>";
    for (auto& r : m.rows) {
        b << "<tr data-id=\"" << r.id << "\"><td><a href=\"/find?id=" << r.id << "\">" << r.id.substr(0, 8)
          << "…</a></td><td>" << esc(r.topic) << "</td><td>" << esc(r.key) << "</td><td class=\"num attempts\">"
          << esc(r.attempt) << "</td><td class=last-error>" << esc(r.last_error) << "</td><td class=next-try>"
          << (r.in_flight ? "in flight (" + esc(r.relay) + ", lease until " + ts(r.next_try) + ")" : ts(r.next_try))
          << "</td></tr>";
    }
    if (m.rows.empty())
        b << "<tr><td colspan=6 class=muted>No message is retrying" << (m.topic.empty() ? "" : " on this topic") << ".</td></tr>";
    b << "</table>";
    if (m.rows.size() == static_cast<size_t>(kPage))
        b << "<p><a id=more href=\"/retrying?topic=" << relay::percent_encode(m.topic) << "&amp;after=" << relay::percent_encode(m.rows.back().pos)
          << "\">Later →</a></p>";
    b << "<p class=muted>Messages whose last attempt failed (a sink error, a nack, a write-back of the WAL transport's "
         "relay), first due first. A message that runs out of attempts becomes a dead letter. Each shows the last "
         "error only: pg_once keeps no other.</p>";
    return b.str();
}

}  // namespace once::console
