#include "pages/dead_letter_bulk.hpp"

#include "html.hpp"
#include "pages/format.hpp"

#include <sstream>

namespace once::console {

namespace {

std::string first(const std::map<std::string, std::vector<std::string>>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() || it->second.empty() ? std::string() : it->second.front();
}

// The filter as hidden fields (the confirmation's and the action's forms).
std::string hidden_filter(const BulkFilter& f) {
    return "<input type=hidden name=topic value=\"" + esc(f.topic) + "\"><input type=hidden name=key_prefix value=\"" +
           esc(f.key_prefix) + "\"><input type=hidden name=error value=\"" + esc(f.error) +
           "\"><input type=hidden name=until value=\"" + esc(f.until) + "\">";
}

std::string describe(const BulkFilter& f) {
    std::string d;
    if (!f.topic.empty()) d += "topic <code>" + esc(f.topic) + "</code>, ";
    if (!f.key_prefix.empty()) d += "key starting with <code>" + esc(f.key_prefix) + "</code>, ";
    if (!f.error.empty()) d += "error containing <code>" + esc(f.error) + "</code>, ";
    if (!f.until.empty()) d += "dead before <code>" + esc(f.until) + "</code>, ";
    if (d.empty()) return "every dead letter";
    d.resize(d.size() - 2);
    return d;
}

std::string count_text(int n) {
    if (n > kMaxBulk) return "more than " + std::to_string(kMaxBulk) + " dead letters";
    return std::to_string(n) + (n == 1 ? " dead letter" : " dead letters");
}

}  // namespace

bool is_timestamp_text(const std::string& s) {
    return !s.empty() && s.size() <= 40 && s.find_first_not_of("0123456789-: T.+") == std::string::npos;
}

BulkFilter bulk_filter(const std::map<std::string, std::vector<std::string>>& fields) {
    BulkFilter f{first(fields, "topic"), first(fields, "key_prefix"), first(fields, "error"), first(fields, "until")};
    if (!is_timestamp_text(f.until)) f.until.clear();
    return f;
}

BulkCount count_bulk(Tx& tx, const BulkFilter& f) {
    auto r = tx.query("SELECT * FROM once.console_dead_letters_matching($1, $2, $3, $4::timestamptz)",
                      {null_if_empty(f.topic), null_if_empty(f.key_prefix), null_if_empty(f.error), null_if_empty(f.until)});
    BulkCount c;
    c.matching = std::stoi(r(0, "matching"));
    c.newest = r.optional(0, "newest_dead_at");
    return c;
}

std::string render_bulk_page(const BulkModel& m) {
    const BulkFilter& f = m.filter;
    std::ostringstream b;
    b << "<form class=filters method=get action=\"/dead/bulk\">Topic <input name=topic id=b-topic value=\"" << esc(f.topic)
      << "\"> Key starts with <input name=key_prefix id=b-key-prefix value=\"" << esc(f.key_prefix)
      << "\"> Error contains <input name=error id=b-error value=\"" << esc(f.error)
      << "\"> Dead before <input name=until id=b-until placeholder=\"2026-11-26 04:00\" size=16 value=\"" << esc(f.until)
      << "\"> <input type=hidden name=count value=1><button type=submit id=count>Count</button> "
         "<a href=\"/dead/bulk\">clear</a></form>";
    if (!m.counted) {
        b << "<p class=muted>Choose the dead letters by filter (every part optional), count them, then redrive or discard "
             "them all, after a confirmation. At most " << kMaxBulk << " per action.</p>";
        return b.str();
    }
    b << "<p id=matching data-n=\"" << m.count.matching << "\">" << count_text(m.count.matching) << " match "
      << describe(f) << ".</p>";
    if (m.count.matching == 0) return b.str();
    if (m.count.matching > kMaxBulk) {
        b << "<div class=error id=too-many>An action takes at most " << kMaxBulk
          << " dead letters: narrow the filter (a topic, a key prefix, an earlier \"dead before\").</div>";
        return b.str();
    }
    b << "<form method=post action=\"/dead/bulk/confirm\"><input type=hidden name=csrf value=\"" << m.csrf << "\">"
      << hidden_filter(f) << "<button type=submit name=op value=redrive class=primary id=bulk-redrive>Redrive these "
      << m.count.matching << "…</button> <button type=submit name=op value=discard class=danger id=bulk-discard>Discard these "
      << m.count.matching << "…</button></form>";
    return b.str();
}

std::string render_bulk_confirm(const BulkModel& m) {
    const BulkFilter& f = m.filter;
    bool redrive = m.op == "redrive";
    std::ostringstream b;
    if (!m.admin) b << "<div class=error>Your role (viewer) cannot act; ask an admin.</div>";
    if (m.count.matching == 0 || !m.count.newest) {
        b << "<p id=question data-n=0>No dead letter matches " << describe(f) << " any more: nothing to do.</p>"
          << "<p><a href=\"/dead\" id=cancel>Back to the dead letters</a></p>";
        return b.str();
    }
    if (m.count.matching > kMaxBulk) {
        b << "<div class=error id=too-many>" << count_text(m.count.matching) << " match " << describe(f)
          << "; an action takes at most " << kMaxBulk << ": narrow the filter.</div>";
        return b.str();
    }
    b << "<p id=question data-n=\"" << m.count.matching << "\">" << (redrive ? "Redrive" : "Discard") << " these "
      << count_text(m.count.matching) << " (" << describe(f) << ", dead at or before " << ts(*m.count.newest) << ")? "
      << (redrive ? "Their attempts start again from 0 and the relays deliver them."
                  : "They are deleted for good; their keys are released.")
      << " Messages that die after this page are not touched.</p>"
      << "<form method=post action=\"/dead/bulk/act\"><input type=hidden name=csrf value=\"" << m.csrf
      << "\"><input type=hidden name=op value=\"" << (redrive ? "redrive" : "discard") << "\">" << hidden_filter(f)
      << "<input type=hidden name=bound value=\"" << esc(*m.count.newest) << "\"><input type=hidden name=expected value=\""
      << m.count.matching << "\"><button type=submit class=" << (redrive ? "primary" : "danger") << " id=confirm>Yes, "
      << (redrive ? "redrive " : "discard ") << m.count.matching << "</button> <a href=\"/dead/bulk\" id=cancel>Cancel</a></form>";
    return b.str();
}

std::string run_bulk_action(Tx& tx, const std::string& actor, const std::string& op, const BulkFilter& f,
                            const std::string& bound) {
    auto r = tx.query("SELECT once.console_dead_letters_act($1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz)",
                      {actor, op, null_if_empty(f.topic), null_if_empty(f.key_prefix), null_if_empty(f.error),
                       null_if_empty(f.until), bound});
    return r.get(0, 0);
}

}  // namespace once::console
