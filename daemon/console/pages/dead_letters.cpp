#include "pages/dead_letters.hpp"

#include "html.hpp"
#include "pages/format.hpp"
#include "percent_encoding.hpp"

#include <sstream>

namespace once::console {

DeadLetterListModel load_dead_letter_list(Tx& tx, DeadLetterFilter f, const std::string& before) {
    if (f.until.size() > 40 || f.until.find_first_not_of("0123456789-: T.+") != std::string::npos) f.until.clear();
    std::optional<std::string> before_dead, before_id;
    auto bar = before.find('|');
    if (bar != std::string::npos && is_uuid(before.substr(bar + 1))) {
        before_dead = before.substr(0, bar);
        before_id = before.substr(bar + 1);
    } else if (!f.until.empty()) {   // dead before this time (the age filter)
        before_dead = f.until;
        before_id = "ffffffff-ffff-ffff-ffff-ffffffffffff";
    }
    auto rows = tx.query("SELECT * FROM once.console_dead_letters($1, $2, $3, $4::timestamptz, $5::uuid, $6)",
                         {null_if_empty(f.topic), null_if_empty(f.key), null_if_empty(f.error), before_dead, before_id, std::to_string(kPage)});
    DeadLetterListModel m;
    m.filter = std::move(f);
    for (int i = 0; i < rows.size(); ++i)
        m.rows.push_back({rows(i, "id"), rows(i, "topic"), rows(i, "key"), rows(i, "attempt"), rows(i, "dead_at"),
                          rows(i, "last_error")});
    return m;
}

std::string render_dead_letter_list(const DeadLetterListModel& m) {
    const DeadLetterFilter& f = m.filter;
    std::ostringstream b;
    b << "<form class=filters method=get action=\"/dead\">Topic <input name=topic id=f-topic value=\"" << esc(f.topic)
      << "\"> Key <input name=key id=f-key value=\"" << esc(f.key) << "\"> Error contains <input name=error id=f-error value=\""
      << esc(f.error) << "\"> Dead before <input name=until id=f-until placeholder=\"2026-11-26 04:00\" size=16 value=\""
      << esc(f.until) << "\"> <button type=submit id=filter>Filter</button> <a href=\"/dead\">clear</a> · <a id=by-filter "
         "href=\"/dead/bulk?topic=" << relay::percent_encode(f.topic) << "&amp;key_prefix=" << relay::percent_encode(f.key) << "&amp;error="
      << relay::percent_encode(f.error) << "&amp;until=" << relay::percent_encode(f.until) << "\">Redrive or discard all that match…</a></form><br>";
    b << "<form method=post action=\"/dead/confirm\" id=dead-form><input type=hidden name=csrf value=\"" << m.csrf
      << "\"><table id=dead><tr><th></th><th>id</th><th>topic</th><th>key</th><th>attempts</th><th>dead since</th><th>last error</th></tr>";
    for (auto& r : m.rows) {
        b << "<tr><td><input type=checkbox name=id value=\"" << r.id << "\" id=\"sel-" << r.id << "\"></td><td><a href=\"/dead/"
          << r.id << "\">" << r.id.substr(0, 8) << "…</a></td><td>" << esc(r.topic) << "</td><td>" << esc(r.key)
          << "</td><td class=num>" << r.attempt << "</td><td>" << ts(r.dead_at) << "</td><td>" << esc(r.last_error)
          << "</td></tr>";
    }
    if (m.rows.empty())
        b << "<tr><td colspan=7 class=muted>No dead letters"
          << (f.topic.empty() && f.key.empty() && f.error.empty() ? "" : " match") << ".</td></tr>";
    b << "</table><button type=submit name=op value=redrive class=primary id=redrive-selected>Redrive selected…</button> "
         "<button type=submit name=op value=discard class=danger id=discard-selected>Discard selected…</button></form>";
    if (m.rows.size() == kPage) {
        const DeadLetterRow& last = m.rows.back();
        std::string next = last.dead_at + "|" + last.id;
        b << "<p><a id=older href=\"/dead?topic=" << relay::percent_encode(f.topic) << "&amp;key=" << relay::percent_encode(f.key) << "&amp;error="
          << relay::percent_encode(f.error) << "&amp;before=" << relay::percent_encode(next) << "\">Older dead letters →</a></p>";
    }
    return b.str();
}

std::optional<DeadLetterModel> load_dead_letter(Tx& tx, const std::string& id) {
    auto m = tx.query("SELECT m.*, jsonb_pretty(m.payload) AS payload_text, jsonb_pretty(m.headers) AS headers_text "
                      "FROM once.console_message($1::uuid) m", {id});
    if (m.size() == 0) return std::nullopt;
    DeadLetterModel d;
    d.id = id;
    d.topic = m(0, "topic");
    d.attempt = m(0, "attempt");
    d.created_at = m(0, "created_at");
    d.relay = m(0, "relay");
    d.last_error = m(0, "last_error");
    d.payload_text = m(0, "payload_text");
    d.key = m.optional(0, "key");
    d.dead_at = m.optional(0, "dead_at");
    d.headers_text = m.optional(0, "headers_text");
    if (d.key) {
        d.is_head = m(0, "is_head") == "t";
        d.waiting = m(0, "waiting");
    }
    return d;
}

std::string render_dead_letter(const DeadLetterModel& m) {
    bool dead = m.dead_at.has_value();
    std::ostringstream b;
    b << "<dl id=message><dt>id</dt><dd>" << esc(m.id) << "</dd><dt>topic</dt><dd>" << esc(m.topic) << "</dd><dt>key</dt><dd>"
      << esc(m.key.value_or("")) << "</dd><dt>state</dt><dd>"
      << (dead ? "<span class=\"badge st-failed\">dead</span> since " + ts(*m.dead_at) : "pending")
      << "</dd><dt>attempts</dt><dd>" << m.attempt << "</dd><dt>created</dt><dd>" << ts(m.created_at)
      << "</dd><dt>last relay</dt><dd>" << esc(m.relay) << "</dd>";
    if (m.key)
        b << "<dt>its key</dt><dd>" << (m.is_head ? "this message is the key's head" : "behind the key's head")
          << "; " << capped(m.waiting) << " later message(s) of the key wait behind it</dd>";
    b << "<dt>error</dt><dd id=last-error>" << esc(m.last_error)
      << " <span class=muted>(pg_once keeps the last error of each message)</span></dd></dl>"
      << "<h2>Payload</h2><pre id=payload>" << esc(m.payload_text) << "</pre><h2>Headers</h2><pre id=headers>"
      << esc(m.headers_text.value_or("(none)")) << "</pre>";
    if (dead)
        b << "<form method=post action=\"/dead/confirm\"><input type=hidden name=csrf value=\"" << m.csrf
          << "\"><input type=hidden name=id value=\"" << m.id << "\"><button type=submit name=op value=redrive class=primary "
             "id=redrive>Redrive…</button> <button type=submit name=op value=discard class=danger id=discard>Discard…</button></form>";
    return b.str();
}

std::vector<std::string> selected_dead_letters(const std::map<std::string, std::vector<std::string>>& form) {
    std::vector<std::string> ids;
    auto it = form.find("id");
    if (it != form.end())
        for (auto& id : it->second)
            if (is_uuid(id) && ids.size() < kMaxIds) ids.push_back(id);
    return ids;
}

std::string render_dead_letter_confirm(const DeadLetterConfirmModel& m) {
    const std::string& op = m.op;
    std::ostringstream b;
    if (!m.admin) b << "<div class=error>Your role (viewer) cannot act; ask an admin.</div>";
    b << "<p id=question>" << (op == "redrive" ? "Redrive" : "Discard") << " these " << m.ids.size() << " dead letter(s)? "
      << (op == "redrive" ? "Their attempts start again from 0 and the relays deliver them."
                          : "They are deleted for good; their keys are released.")
      << "</p><ul>";
    for (auto& id : m.ids) b << "<li><a href=\"/dead/" << id << "\">" << id << "</a></li>";
    b << "</ul><form method=post action=\"/dead/act\"><input type=hidden name=csrf value=\"" << m.csrf
      << "\"><input type=hidden name=op value=\"" << op << "\">";
    for (auto& id : m.ids) b << "<input type=hidden name=id value=\"" << id << "\">";
    b << "<button type=submit class=" << (op == "redrive" ? "primary" : "danger") << " id=confirm>Yes, " << op
      << "</button> <a href=\"/dead\" id=cancel>Cancel</a></form>";
    return b.str();
}

}  // namespace once::console
