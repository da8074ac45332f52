#include "pages/actions.hpp"

#include "html.hpp"
#include "pages/format.hpp"

#include <optional>
#include <sstream>

namespace once::console {

ActionsModel load_actions(Tx& tx, std::string before) {
    if (before.find_first_not_of("0123456789") != std::string::npos || before.size() > 18) before.clear();
    std::optional<std::string> after_id;
    if (!before.empty()) after_id = before;
    auto rows = tx.query("SELECT * FROM once.console_recent_actions($1::bigint, $2)", {after_id, std::to_string(kPage)});
    ActionsModel m;
    for (int i = 0; i < rows.size(); ++i)
        m.rows.push_back({rows(i, "id"), rows(i, "at"), rows(i, "actor"), rows(i, "db_role"), rows(i, "action"),
                          rows(i, "ids"), rows(i, "affected"), rows(i, "result")});
    return m;
}

std::string render_actions(const ActionsModel& m) {
    std::ostringstream b;
    b << "<table id=actions><tr><th>#</th><th>when</th><th>who</th><th>database role</th><th>action</th><th>ids</th>"
         "<th>affected</th><th>result</th></tr>";
    for (auto& r : m.rows) {
        std::string ids = r.ids;
        if (ids.size() > 300) ids = ids.substr(0, 300) + "…";
        b << "<tr><td class=num>" << r.id << "</td><td>" << ts(r.at) << "</td><td>" << esc(r.actor) << "</td><td>"
          << esc(r.db_role) << "</td><td>" << esc(r.action) << "</td><td><code>" << esc(ids) << "</code></td><td class=num>"
          << r.affected << "</td><td>" << esc(r.result) << "</td></tr>";
    }
    if (m.rows.empty()) b << "<tr><td colspan=8 class=muted>No actions yet.</td></tr>";
    b << "</table>";
    if (m.rows.size() == kPage) b << "<p><a id=older href=\"/actions?before=" << m.rows.back().id << "\">Older actions →</a></p>";
    return b.str();
}

}  // namespace once::console
