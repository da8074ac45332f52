#include "operator_actions.hpp"

namespace once::console {

std::string uuid_array_literal(const std::vector<std::string>& ids) {
    std::string arr = "{";
    for (size_t i = 0; i < ids.size(); ++i) arr += (i ? "," : "") + ids[i];
    arr += "}";
    return arr;
}

std::string run_dead_letter_action(Tx& tx, const std::string& user, const std::string& op, const std::vector<std::string>& ids) {
    auto n = tx.query("SELECT once.console_" + std::string(op == "redrive" ? "redrive" : "discard") + "($1, $2::uuid[])",
                      {user, uuid_array_literal(ids)});
    return n.get(0, 0);
}

std::string run_saga_action(Tx& tx, const std::string& user, const std::string& op, const std::string& name,
                            const std::string& id, const std::optional<std::string>& reason) {
    auto st = op == "retry" ? tx.query("SELECT once.console_saga_retry($1, $2, $3)", {user, name, id})
                            : tx.query("SELECT once.console_saga_abort($1, $2, $3, $4)", {user, name, id, reason});
    return st.get(0, 0);
}

std::string run_row_action(Tx& tx, const std::string& user, const std::string& op, const std::string& a, const std::string& b,
                    const std::string& owner) {
    auto done = op == "inbox_retry"
                    ? tx.query("SELECT once.console_inbox_retry($1, $2, $3)", {user, a, b})
                    : tx.query("SELECT once.console_key_release($1, $2, $3, $4::oid)", {user, a, b, owner});
    return done.get(0, 0);
}

}  // namespace once::console
