#include "pages/find_message.hpp"

#include "html.hpp"
#include "pages/format.hpp"

#include <sstream>

namespace once::console {

FindModel find_form(const std::string& id) {
    FindModel m;
    m.id = id;
    return m;
}

FindModel load_find(Tx& tx, const std::string& id) {
    FindModel m = find_form(id);
    m.looked_up = true;
    auto r = tx.query("SELECT * FROM once.console_find_message($1)", {id});
    for (int i = 0; i < r.size(); ++i)
        m.rows.push_back({r(i, "place"), r(i, "state"), r(i, "source"), r(i, "topic"), r(i, "key"), r(i, "attempt"),
                          r(i, "last_error"), r(i, "at")});
    return m;
}

std::string found_time_label(const FoundRow& r) {
    if (r.place == "delivered") return "delivered";
    if (r.place == "inbox") return "received";
    if (r.place == "inbox failures") return "last failed";
    if (r.state == "dead") return "dead since";
    if (r.state == "claimed") return "lease until";
    if (r.state == "ready") return "due since";
    return "due";
}

std::string render_find(const FindModel& m) {
    std::ostringstream b;
    b << "<form class=filters method=get action=\"/find\">Message id <input name=id id=find-id size=40 value=\"" << esc(m.id)
      << "\"> <button type=submit id=find>Find</button></form><p class=muted>An outbox message id (a uuid) or an inbox "
         "message id: the outbox (dead letters included), the delivered history, the inbox and its failures are searched."
         "</p>";
    if (!m.looked_up) return b.str();
    if (m.rows.empty()) {
        b << "<p id=not-found><code>" << esc(m.id)
          << "</code> is not in the outbox or dead letters, nor in the delivered history or the inbox: delivered or never "
             "sent. (An acked message is deleted; a copy is kept only for topics whose policy sets a retention.)</p>";
        return b.str();
    }
    b << "<table id=found><tr><th>where</th><th>state</th><th>source</th><th>topic</th><th>key</th><th>attempts</th>"
         "<th>last error</th><th>when</th></tr>";
    for (auto& r : m.rows) {
        bool outbox = r.place == "outbox";
        b << "<tr" << (r.state == "dead" || r.state == "poison" ? " class=attn" : "") << " data-place=\"" << esc(r.place)
          << "\"><td class=place>" << (outbox && is_uuid(m.id) ? "<a href=\"/dead/" + esc(m.id) + "\">outbox</a>" : esc(r.place))
          << "</td><td class=state>" << esc(r.state) << "</td><td>" << esc(r.source) << "</td><td>" << esc(r.topic)
          << "</td><td>" << esc(r.key) << "</td><td class=num>" << esc(r.attempt) << "</td><td>" << esc(r.last_error)
          << "</td><td>" << found_time_label(r) << " " << ts(r.at) << "</td></tr>";
    }
    b << "</table>";
    return b.str();
}

}  // namespace once::console
