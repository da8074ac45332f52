#include "pages/sagas.hpp"

#include "html.hpp"
#include "pages/format.hpp"
#include "percent_encoding.hpp"

#include <map>
#include <sstream>

namespace once::console {

namespace {

const char* const kStatuses[] = {"failed", "running", "compensating", "completed", "compensated"};
// Columns of the counts, in the saga's lifecycle order.
const char* const kCountOrder[] = {"running", "compensating", "failed", "completed", "compensated"};

}  // namespace

SagaListModel load_saga_list(Tx& tx, const std::string& name, std::string status, const std::string& q,
                             const std::string& before) {
    bool known = status.empty();
    for (auto* s : kStatuses) known |= status == s;
    if (!known) status.clear();
    std::optional<std::string> before_created, before_id;
    auto bar = before.find('|');
    if (bar != std::string::npos) { before_created = before.substr(0, bar); before_id = before.substr(bar + 1); }
    auto names = tx.query("SELECT name FROM once.console_saga_definitions()");
    auto per_def = tx.query("SELECT name, status, n FROM once.console_saga_definition_counts()");
    auto rows = q.empty() ? tx.query("SELECT * FROM once.console_sagas($1, $2, $3::timestamptz, $4, $5)",
                                     {null_if_empty(name), null_if_empty(status), before_created, before_id, std::to_string(kPage)})
                          : tx.query("SELECT * FROM once.console_saga_search($1, $2)", {q, std::to_string(kPage)});
    SagaListModel m;
    m.name = name;
    m.status = status;
    m.q = q;
    m.by_id = !q.empty() && q.find('=') == std::string::npos;
    for (int i = 0; i < names.size(); ++i) m.definitions.push_back(names.get(i, 0));
    for (int i = 0; i < per_def.size(); ++i) m.counts.push_back({per_def.get(i, 0), per_def.get(i, 1), per_def.get(i, 2)});
    for (int i = 0; i < rows.size(); ++i)
        m.rows.push_back({rows(i, "saga_id"), rows(i, "name"), rows(i, "version"), rows(i, "status"), rows(i, "step"),
                          rows(i, "attempts"), rows(i, "created_at"), rows(i, "updated_at"), rows(i, "last_error")});
    return m;
}

std::string render_saga_list(const SagaListModel& m) {
    std::ostringstream b;
    b << "<form class=filters method=get action=\"/sagas\">Definition <select name=name id=f-name><option value=\"\">all</option>";
    for (auto& d : m.definitions) b << "<option" << (d == m.name ? " selected" : "") << ">" << esc(d) << "</option>";
    b << "</select> Status <select name=status id=f-status><option value=\"\">all</option>";
    for (auto* s : kStatuses) b << "<option" << (m.status == s ? " selected" : "") << ">" << s << "</option>";
    b << "</select> <button type=submit id=filter>Show</button></form><form class=filters method=get action=\"/sagas\">"
         "Saga id or business key <input name=q id=q placeholder=\"order-42 or order_id=1001\" value=\"" << esc(m.q)
      << "\"> <button type=submit id=search>Find</button></form>"
         "<p class=muted>A business key is key=value of the saga's input (order_id=1001); a saga id opens the saga "
         "(or lists the definitions that have the id: saga ids are unique per definition).</p>";
    // Per definition and status, each counted up to kCap.
    b << "<table id=definition-counts><tr><th>definition</th>";
    for (auto* s : kCountOrder) b << "<th>" << s << "</th>";
    b << "</tr>";
    for (size_t i = 0; i < m.counts.size();) {
        std::string def = m.counts[i].name;
        std::map<std::string, std::string> n;
        for (; i < m.counts.size() && m.counts[i].name == def; ++i) n[m.counts[i].status] = m.counts[i].n;
        bool failed = !n["failed"].empty() && n["failed"] != "0";
        b << "<tr" << (failed ? " class=attn" : "") << "><td>" << esc(def) << "</td>";
        for (auto* s : kCountOrder) {
            std::string v = n[s].empty() ? "0" : n[s];
            b << "<td class=num><a href=\"/sagas?name=" << relay::percent_encode(def) << "&amp;status=" << s << "\">" << capped(v)
              << "</a></td>";
        }
        b << "</tr>";
    }
    if (m.counts.empty()) b << "<tr><td colspan=6 class=muted>No saga definitions.</td></tr>";
    b << "</table><br>";
    if (m.by_id) b << "<p id=search-result>Sagas with the id " << esc(m.q) << ", one per definition:</p>";
    else if (!m.q.empty()) b << "<p id=search-result>Sagas whose input has " << esc(m.q) << " (newest first):</p>";
    b << "<table id=sagas><tr><th>saga id</th><th>definition</th><th>status</th><th>step</th><th>attempts</th><th>started</th>"
         "<th>updated</th><th>last error</th></tr>";
    for (auto& r : m.rows) {
        b << "<tr" << (r.status == "failed" ? " class=attn" : "") << "><td><a href=\"" << esc(saga_href(r.name, r.saga_id))
          << "\">" << esc(r.saga_id) << "</a></td><td>" << esc(r.name) << " v" << r.version << "</td><td>"
          << status_badge(r.status) << "</td><td>" << esc(r.step) << "</td><td class=num>" << r.attempts << "</td><td>"
          << ts(r.created_at) << "</td><td>" << ts(r.updated_at) << "</td><td>" << esc(r.last_error) << "</td></tr>";
    }
    if (m.rows.empty()) b << "<tr><td colspan=8 class=muted>No sagas match.</td></tr>";
    b << "</table>";
    if (m.rows.size() == kPage && m.q.empty())
        b << "<p><a id=older href=\"/sagas?name=" << relay::percent_encode(m.name) << "&amp;status=" << relay::percent_encode(m.status)
          << "&amp;before=" << relay::percent_encode(m.rows.back().created_at + "|" + m.rows.back().saga_id) << "\">Older sagas →</a></p>";
    return b.str();
}

std::optional<SagaModel> load_saga(Tx& tx, const std::string& name, const std::string& id) {
    auto s = tx.query("SELECT s.*, jsonb_pretty(s.input) AS input_text, jsonb_pretty(s.data) AS data_text "
                      "FROM once.console_saga($1, $2) s", {name, id});
    if (s.size() == 0) return std::nullopt;
    auto hist = tx.query("SELECT * FROM once.console_saga_history($1, $2, 1000)", {name, id});
    auto steps = tx.query(
        "SELECT e->>'name' AS name, coalesce(e->>'kind', 'compensable') AS kind, "
        "coalesce('topic ' || (e->'action'->>'topic'), 'function ' || (e->'action'->>'function'), '') AS action, "
        "coalesce('topic ' || (e->'compensation'->>'topic'), 'function ' || (e->'compensation'->>'function'), '') AS compensation, "
        "coalesce(e->>'max_attempts', '0') AS max_attempts "
        "FROM jsonb_array_elements($1::jsonb->'steps') WITH ORDINALITY AS x(e, n) ORDER BY n",
        {s(0, "definition")});
    SagaModel m;
    m.name = name;
    m.id = id;
    m.definition_name = s(0, "name");
    m.version = s(0, "version");
    m.status = s(0, "status");
    m.step = s(0, "step");
    m.attempts = s(0, "attempts");
    m.created_at = s(0, "created_at");
    m.updated_at = s(0, "updated_at");
    m.input_text = s(0, "input_text");
    m.data_text = s(0, "data_text");
    m.cause = s.optional(0, "cause");
    m.last_error = s.optional(0, "last_error");
    m.deadline = s.optional(0, "deadline");
    m.finished_at = s.optional(0, "finished_at");
    for (int i = 0; i < hist.size(); ++i)
        m.history.push_back({hist(i, "at"), hist(i, "from_status"), hist(i, "to_status"), hist(i, "step"), hist(i, "event"),
                             hist(i, "reason"), hist(i, "message_id")});
    for (int i = 0; i < steps.size(); ++i) {
        DiagramStep d{steps(i, "name"), steps(i, "kind"), steps(i, "action"), steps(i, "compensation"), 0};
        try { d.max_attempts = std::stoi(steps(i, "max_attempts")); } catch (...) {}
        if (d.kind == "retriable") d.compensation.clear();
        m.steps.push_back(d);
    }
    return m;
}

DiagramPath saga_path(const std::vector<SagaHistoryRow>& history, const std::string& status, const std::string& step) {
    DiagramPath p;
    std::vector<std::string> seq{"start"};
    auto visit = [&](const std::string& n) {
        if (seq.back() != n) { p.edges.insert({seq.back(), n}); seq.push_back(n); }
        p.nodes.insert(n);
    };
    p.nodes.insert("start");
    for (auto& h : history) {
        const std::string &s = h.step, &from = h.from_status, &to = h.to_status;
        if (s.empty()) continue;
        visit(from == "compensating" || to == "compensating" ? "undo_" + s : s);
        if (to == "completed" || to == "compensated" || to == "failed") visit(to);
    }
    if (status == "running") p.current = step;
    else if (status == "compensating") p.current = "undo_" + step;
    else p.current = status;   // completed, compensated, failed
    return p;
}

std::string render_saga(const SagaModel& m) {
    std::string svg;
    try {
        svg = render_svg(saga_dot(m.steps, saga_path(m.history, m.status, m.step)));
    } catch (const std::exception& e) {
        svg = "<div class=error>" + esc(e.what()) + "</div>";
    }
    std::ostringstream b;
    b << "<dl id=saga><dt>saga id</dt><dd>" << esc(m.id) << "</dd><dt>definition</dt><dd>" << esc(m.definition_name)
      << " version " << m.version << "</dd><dt>status</dt><dd id=status>" << status_badge(m.status) << "</dd><dt>step</dt><dd>"
      << esc(m.step) << " (attempt " << m.attempts << ")</dd>";
    if (m.cause) b << "<dt>cause</dt><dd id=cause><b>" << esc(*m.cause) << "</b></dd>";
    if (m.last_error) b << "<dt>last error</dt><dd id=last-error>" << esc(*m.last_error) << "</dd>";
    b << "<dt>started</dt><dd>" << ts(m.created_at) << "</dd><dt>updated</dt><dd>" << ts(m.updated_at) << "</dd>";
    if (m.deadline) b << "<dt>next deadline</dt><dd>" << ts(*m.deadline) << "</dd>";
    if (m.finished_at) b << "<dt>finished</dt><dd>" << ts(*m.finished_at) << "</dd>";
    b << "</dl>";
    if (m.status == "failed" || m.status == "running") {
        b << "<form method=post action=\"/sagas/confirm\"><input type=hidden name=csrf value=\"" << m.csrf
          << "\"><input type=hidden name=name value=\"" << esc(m.name) << "\"><input type=hidden name=saga_id value=\""
          << esc(m.id) << "\">";
        if (m.status == "failed") b << "<button type=submit name=op value=retry class=primary id=retry>Retry…</button> ";
        b << "<button type=submit name=op value=abort class=danger id=abort>Abort…</button></form>";
    }
    b << "<h2>State diagram</h2><div class=diagram id=diagram>" << svg
      << "</div><p class=muted>Yellow: where the saga is now. Blue: the states it has been through.</p>"
      << "<h2>Timeline</h2><table id=history><tr><th>at</th><th>from</th><th>to</th><th>step</th><th>event</th><th>reason</th>"
         "<th>message</th></tr>";
    for (auto& h : m.history)
        b << "<tr" << (h.to_status == "failed" ? " class=attn" : "") << "><td>" << esc(h.at.substr(0, 23)) << "</td><td>"
          << esc(h.from_status) << "</td><td>" << esc(h.to_status) << "</td><td>" << esc(h.step) << "</td><td>"
          << esc(h.event) << "</td><td>" << esc(h.reason) << "</td><td>" << esc(h.message_id) << "</td></tr>";
    b << "</table><h2>Input</h2><pre id=input>" << esc(m.input_text) << "</pre><h2>Data</h2><pre id=data>"
      << esc(m.data_text) << "</pre>";
    return b.str();
}

std::string render_saga_confirm(const SagaConfirmModel& m) {
    const std::string& op = m.op;
    std::ostringstream b;
    if (!m.admin) b << "<div class=error>Your role (viewer) cannot act; ask an admin.</div>";
    b << "<p id=question>" << (op == "retry" ? "Retry" : "Abort") << " saga <a href=\"" << esc(saga_href(m.name, m.id)) << "\">"
      << esc(m.id) << "</a> of definition <code>" << esc(m.name) << "</code>? "
      << (op == "retry" ? "It resumes where it stopped: the pending command is sent again with the same key."
                        : "Compensation starts: every step that did or may have taken effect is undone, newest first.")
      << "</p><form method=post action=\"/sagas/act\"><input type=hidden name=csrf value=\"" << m.csrf
      << "\"><input type=hidden name=op value=\"" << op << "\"><input type=hidden name=name value=\"" << esc(m.name)
      << "\"><input type=hidden name=saga_id value=\"" << esc(m.id) << "\">";
    if (op == "abort") b << "<p><label>Reason <input name=reason id=reason value=\"aborted in once-console\" size=50></label></p>";
    b << "<button type=submit class=" << (op == "retry" ? "primary" : "danger") << " id=confirm>Yes, " << op
      << "</button> <a href=\"" << esc(saga_href(m.name, m.id)) << "\" id=cancel>Cancel</a></form>";
    return b.str();
}

}  // namespace once::console
