#include "pages/keys.hpp"

#include "html.hpp"
#include "pages/format.hpp"

#include <sstream>

namespace once::console {

KeysModel keys_form(const std::string& scope, const std::string& key) {
    KeysModel m;
    m.scope = scope;
    m.key = key;
    return m;
}

KeysModel load_keys(Tx& tx, const std::string& scope, const std::string& key) {
    KeysModel m = keys_form(scope, key);
    m.looked_up = true;
    auto k = tx.query("SELECT * FROM once.console_key($1, $2)", {scope, key});
    for (int i = 0; i < k.size(); ++i) {
        KeyOwnerRow r;
        r.owner_id = k(i, "owner_id");
        if (!k.is_null(i, "owner")) r.owner = k(i, "owner");
        r.state = k(i, "state");
        r.attempt = k(i, "attempt");
        r.recovery_point = k(i, "recovery_point");
        r.locked_until = k(i, "locked_until");
        r.status = k(i, "status");
        r.created_at = k(i, "created_at");
        r.expires_at = k(i, "expires_at");
        r.expired = k(i, "expired") == "t";
        if (!k.is_null(i, "response_bytes")) r.response_bytes = k(i, "response_bytes");
        m.owners.push_back(std::move(r));
    }
    return m;
}

std::string render_keys(const KeysModel& m) {
    std::ostringstream b;
    b << "<form class=filters method=get action=\"/keys\">Scope <input name=scope id=k-scope value=\"" << esc(m.scope)
      << "\"> Key <input name=key id=k-key value=\"" << esc(m.key) << "\"> <button type=submit id=lookup>Look up</button></form>";
    if (!m.looked_up) return b.str();
    if (m.owners.empty()) {
        b << "<p id=not-found>No key <code>" << esc(m.key) << "</code> in scope <code>" << esc(m.scope) << "</code>.</p>";
        return b.str();
    }
    // A key's identity is (scope, key, owner): each role that stored it has its own row,
    // and a release is of one row.
    b << "<p class=muted id=key-owners>" << m.owners.size() << " role(s) hold this key; each has its own.</p><div id=keys>";
    for (auto& k : m.owners) {
        std::string owner = k.owner ? *k.owner
                                    : (k.owner_id == "0" ? "none (stored by 0.1, shared)" : "dropped role, oid " + k.owner_id);
        b << "<h2>Owner " << esc(owner) << "</h2><dl class=key id=\"key-" << esc(k.owner_id) << "\"><dt>owner</dt><dd class=owner>"
          << esc(owner) << "</dd><dt>state</dt><dd>" << esc(k.state) << (k.expired ? " (expired: treated as absent)" : "")
          << "</dd><dt>attempt</dt><dd>" << k.attempt << "</dd><dt>recovery point</dt><dd>" << esc(k.recovery_point)
          << "</dd><dt>leased until</dt><dd>" << ts(k.locked_until) << "</dd><dt>status</dt><dd>" << esc(k.status)
          << "</dd><dt>stored response</dt><dd>"
          << (k.response_bytes ? *k.response_bytes + " bytes (not shown: it belongs to its owner)" : "none")
          << "</dd><dt>created</dt><dd>" << ts(k.created_at) << "</dd><dt>expires</dt><dd>" << ts(k.expires_at)
          << "</dd></dl>";
        if (k.state == "in_progress" && !k.expired)
            b << "<form method=post action=\"/keys/confirm\"><input type=hidden name=csrf value=\"" << m.csrf
              << "\"><input type=hidden name=op value=key_release><input type=hidden name=a value=\"" << esc(m.scope)
              << "\"><input type=hidden name=b value=\"" << esc(m.key) << "\"><input type=hidden name=owner value=\""
              << esc(k.owner_id) << "\"><button type=submit class=danger id=\"release-" << esc(k.owner_id)
              << "\">Release…</button></form>";
    }
    b << "</div>";
    return b.str();
}

}  // namespace once::console
