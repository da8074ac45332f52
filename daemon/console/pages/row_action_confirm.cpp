#include "pages/row_action_confirm.hpp"

#include "html.hpp"

#include <sstream>

namespace once::console {

bool valid_row_action(const std::string& op, const std::string& a, const std::string& b) {
    return (op == "inbox_retry" || op == "key_release") && !a.empty() && !b.empty();
}

bool is_owner_oid(const std::string& s) {
    return !s.empty() && s.size() <= 10 && s.find_first_not_of("0123456789") == std::string::npos &&
           std::stoull(s) <= 4294967295ULL;
}

std::string load_key_owner_name(Tx& tx, const std::string& scope, const std::string& key, const std::string& owner) {
    auto k = tx.query("SELECT owner FROM once.console_key($1, $2) WHERE owner_id = $3::oid", {scope, key, owner});
    if (k.size() == 1 && !k.is_null(0, "owner")) return k(0, "owner");
    return owner;
}

std::string row_action_home(const std::string& op) { return op == "inbox_retry" ? "/inbox" : "/keys"; }

std::string render_row_action_confirm(const RowActionConfirmModel& m) {
    std::ostringstream b;
    if (!m.admin) b << "<div class=error>Your role (viewer) cannot act; ask an admin.</div>";
    if (m.op == "inbox_retry")
        b << "<p id=question>Retry message <code>" << esc(m.b) << "</code> from source <code>" << esc(m.a)
          << "</code>? Its failures are forgotten. If the inbox kept a copy of it, its handlers run again now (a failure "
             "leaves it poison); otherwise they run when its sender delivers it again (a pg_once relay named after the "
             "source dead-lettered it in its own database: redrive it there).</p>";
    else
        b << "<p id=question>Release key <code>" << esc(m.b) << "</code> in scope <code>" << esc(m.a) << "</code> of owner <code>"
          << esc(m.owner_name) << "</code>? Its holder loses it; that owner's next call with the key runs the command again. "
             "Other roles' rows of the key stay.</p>";
    b << "<form method=post action=\"" << row_action_home(m.op) << "/act\"><input type=hidden name=csrf value=\"" << m.csrf
      << "\"><input type=hidden name=op value=\"" << m.op << "\"><input type=hidden name=a value=\"" << esc(m.a)
      << "\"><input type=hidden name=b value=\"" << esc(m.b) << "\">"
      << (m.op == "key_release" ? "<input type=hidden name=owner value=\"" + esc(m.owner) + "\">" : "")
      << "<button type=submit class=danger id=confirm>Yes</button> "
      << "<a href=\"" << row_action_home(m.op) << "\" id=cancel>Cancel</a></form>";
    return b.str();
}

}  // namespace once::console
