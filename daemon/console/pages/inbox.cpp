#include "pages/inbox.hpp"

#include "html.hpp"
#include "pages/format.hpp"
#include "percent_encoding.hpp"

#include <optional>
#include <sstream>

namespace once::console {

InboxModel load_inbox(Tx& tx, const std::string& after) {
    std::optional<std::string> after_source, after_id;
    auto bar = after.find('|');
    if (bar != std::string::npos) { after_source = after.substr(0, bar); after_id = after.substr(bar + 1); }
    auto rows = tx.query("SELECT * FROM once.console_inbox_poison($1, $2, $3)", {after_source, after_id, std::to_string(kPage)});
    auto subs = tx.query("SELECT * FROM once.console_subscriptions()", {});
    InboxModel m;
    for (int i = 0; i < rows.size(); ++i)
        m.poison.push_back({rows(i, "source"), rows(i, "message_id"), rows(i, "topic"), rows(i, "attempts"),
                            rows(i, "first_failed_at"), rows(i, "last_failed_at"), rows(i, "last_error"),
                            rows(i, "has_copy") == "t"});
    for (int i = 0; i < subs.size(); ++i)
        m.subscriptions.push_back({subs(i, "topic_pattern"), subs(i, "handler"), subs(i, "subscribed_at"),
                                   subs(i, "handler_exists") == "t"});
    return m;
}

// What Retry does for this row, said truthfully. With a stored copy the handlers run again
// at once (once.inbox_retry delivers the copy). Without one, Retry only forgets the failures:
// the message runs again when its sender delivers it again. Either way, a pg_once relay (the
// postgresql:// sink) that met poison dead-lettered the message in its own database, under
// the relay's name (or its source=), which is this row's source: with a copy that dead letter
// is left to discard, without one it is what to redrive.
std::string retry_effect(const PoisonRow& r) {
    if (r.has_copy)
        return "<div class=muted>runs its handlers now, from the copy kept here. If a pg_once relay named <code>" +
               esc(r.source) + "</code> brought it (postgresql:// sink), that relay also dead-lettered message <code>" +
               esc(r.message_id) + "</code> in its own database: discard it there (a redrive is answered duplicate)</div>";
    return "<div class=muted>forgets the failures only: the sender must deliver it again. From a pg_once relay named <code>" +
           esc(r.source) + "</code>: it dead-lettered message <code>" + esc(r.message_id) +
           "</code> in its own database; redrive it there (once.redrive)</div>";
}

std::string render_inbox(const InboxModel& m) {
    std::ostringstream b;
    b << "<p class=muted>Poison messages failed their source's max attempts; once.deliver refuses them until they are "
         "retried (fix the handler or the data first). Retry runs the handlers again at once when the inbox kept a copy "
         "of the message; otherwise it only forgets the failures, and the message runs when its sender delivers it again.</p><table id=poison><tr><th>source</th><th>message id</th><th>topic</th>"
         "<th>attempts</th><th>first failed</th><th>last failed</th><th>last error</th><th></th></tr>";
    for (auto& r : m.poison) {
        b << "<tr class=attn><td>" << esc(r.source) << "</td><td>" << esc(r.message_id) << "</td><td>" << esc(r.topic)
          << "</td><td class=num>" << r.attempts << "</td><td>" << ts(r.first_failed_at) << "</td><td>"
          << ts(r.last_failed_at) << "</td><td>" << esc(r.last_error)
          << "</td><td><form method=post action=\"/inbox/confirm\"><input type=hidden name=csrf value=\"" << m.csrf
          << "\"><input type=hidden name=op value=inbox_retry><input type=hidden name=a value=\"" << esc(r.source)
          << "\"><input type=hidden name=b value=\"" << esc(r.message_id)
          << "\"><button type=submit>Retry…</button></form>" << retry_effect(r) << "</td></tr>";
    }
    if (m.poison.empty()) b << "<tr><td colspan=8 class=muted>No poison messages.</td></tr>";
    b << "</table>";
    if (m.poison.size() == kPage)
        b << "<p><a id=older href=\"/inbox?after=" << relay::percent_encode(m.poison.back().source + "|" + m.poison.back().message_id)
          << "\">More →</a></p>";
    // Subscriptions: one whose handler was dropped (while event triggers were off) is marked.
    b << "<h2>Subscriptions</h2><table id=subscriptions><tr><th>topic pattern</th><th>handler</th><th>since</th></tr>";
    for (auto& s : m.subscriptions) {
        bool gone = !s.handler_exists;
        b << "<tr" << (gone ? " class=attn" : "") << "><td>" << esc(s.topic_pattern) << "</td><td>" << esc(s.handler)
          << (gone ? " <b class=handler-gone>handler dropped: deliver fails (ON305); once.unsubscribe it</b>" : "")
          << "</td><td>" << ts(s.subscribed_at) << "</td></tr>";
    }
    if (m.subscriptions.empty()) b << "<tr><td colspan=3 class=muted>No subscriptions.</td></tr>";
    b << "</table>";
    return b.str();
}

}  // namespace once::console
