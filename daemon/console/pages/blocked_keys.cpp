#include "pages/blocked_keys.hpp"

#include "html.hpp"
#include "pages/format.hpp"

#include <sstream>

namespace once::console {

BlockedKeysModel load_blocked_keys(Tx& tx) {
    auto rows = tx.query("SELECT * FROM once.console_blocked_keys(100)");
    BlockedKeysModel m;
    for (int i = 0; i < rows.size(); ++i)
        m.rows.push_back({rows(i, "key"), rows(i, "topic"), rows(i, "reason"), rows(i, "head_id"), rows(i, "head_error"),
                          rows(i, "held_until"), rows(i, "waiting")});
    return m;
}

std::string render_blocked_keys(const BlockedKeysModel& m) {
    std::ostringstream b;
    b << "<p class=muted>A key's messages are delivered in order: while its oldest message is dead, or delayed to a "
         "later time, the ones behind it wait.</p><table id=blocked><tr><th>key</th><th>topic</th><th>why</th><th>head message</th>"
         "<th>waiting behind it</th><th>what unblocks it</th></tr>";
    for (auto& r : m.rows) {
        b << "<tr class=attn><td>" << esc(r.key) << "</td><td>" << esc(r.topic) << "</td><td>";
        if (r.reason == "dead") b << "its head is <b>dead</b>: " << esc(r.head_error);
        else b << "its head is <b>delayed</b> until " << ts(r.held_until);
        b << "</td><td><a href=\"/dead/" << r.head_id << "\">" << r.head_id.substr(0, 8) << "…</a></td><td class=num>"
          << capped(r.waiting) << "</td><td>";
        if (r.reason == "dead")
            b << "<form method=post action=\"/dead/confirm\"><input type=hidden name=csrf value=\"" << m.csrf
              << "\"><input type=hidden name=id value=\"" << r.head_id << "\"><button type=submit name=op value=redrive>Redrive head…</button> "
                 "<button type=submit name=op value=discard class=danger>Discard head…</button></form>";
        else
            b << "waits for its time; nothing to do unless the delay is wrong";
        b << "</td></tr>";
    }
    if (m.rows.empty()) b << "<tr><td colspan=6 class=muted>No key is blocked.</td></tr>";
    b << "</table>";
    return b.str();
}

}  // namespace once::console
