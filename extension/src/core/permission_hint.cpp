#include "permission_hint.hpp"

#include <array>
#include <utility>

namespace once {

namespace {

// The public API's functions and the role each is granted to (sql/src/*.sql GRANT EXECUTE).
constexpr std::array<std::pair<std::string_view, const char*>, 40> kFunctions{{
    {"send", "once_producer"}, {"send_many", "once_producer"}, {"run", "once_producer"},
    {"key_acquire", "once_producer"}, {"key_checkpoint", "once_producer"}, {"key_complete", "once_producer"},
    {"key_release", "once_producer"}, {"request_fingerprint", "once_producer"}, {"saga_start", "once_producer"},
    {"claim", "once_relay"}, {"claim_locked", "once_relay"}, {"ack", "once_relay"}, {"nack", "once_relay"},
    {"dead", "once_relay"}, {"extend", "once_relay"}, {"saga_tick", "once_relay"}, {"purge", "once_relay"},
    {"relay_maintenance_lock", "once_relay"}, {"outbox_notifier_status", "once_relay"},
    {"receive", "once_consumer"}, {"deliver", "once_consumer"}, {"inbox_failed", "once_consumer"},
    {"saga_reply", "once_consumer"}, {"saga_reply_handler", "once_consumer"},
    {"redrive", "once_admin"}, {"discard", "once_admin"}, {"topic_policy", "once_admin"},
    {"subscribe", "once_admin"}, {"unsubscribe", "once_admin"}, {"inbox_retry", "once_admin"},
    {"inbox_configure", "once_admin"}, {"purge_inbox", "once_admin"}, {"saga_define", "once_admin"},
    {"saga_retry", "once_admin"}, {"saga_abort", "once_admin"}, {"saga_diagram", "once_admin"},
    {"grant_publish", "once_admin"}, {"revoke_publish", "once_admin"}, {"expedite", "once_admin"},
    {"cancel", "once_admin"},
}};

// A role name as SQL writes it: bare when it is a plain lower-case identifier, else quoted.
std::string quote_role(std::string_view role) {
    bool plain = !role.empty() && (role[0] == '_' || (role[0] >= 'a' && role[0] <= 'z'));
    for (char c : role)
        if (!(c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) plain = false;
    if (plain) return std::string(role);
    std::string q = "\"";
    for (char c : role) {
        if (c == '"') q += '"';
        q += c;
    }
    return q + "\"";
}

// The object name of "permission denied for <kind> <name>": the text after the fixed prefix.
std::string_view object_name(std::string_view message, std::string_view prefix) {
    if (message.substr(0, prefix.size()) != prefix) return {};
    return message.substr(prefix.size());
}

}  // namespace

const char* role_for_function(std::string_view function) {
    for (const auto& [name, role] : kFunctions)
        if (name == function) return role;
    return nullptr;
}

std::string permission_hint(std::string_view message_id, std::string_view message, std::string_view role) {
    const std::string who = role.empty() ? std::string("<role>") : quote_role(role);
    if (message_id == "permission denied for schema %s") {
        if (object_name(message, "permission denied for schema ") != "once") return {};
        return "Grant the role a pg_once role: GRANT once_producer TO " + who +
               " to send messages and start sagas; once_relay for a relay, once_consumer for an inbox, "
               "once_admin to operate (docs/security.md).";
    }
    if (message_id == "permission denied for function %s") {
        std::string_view fn = object_name(message, "permission denied for function ");
        const char* grant = role_for_function(fn);
        if (grant == nullptr) return {};
        return "once." + std::string(fn) + " is granted to " + grant + ": GRANT " + grant + " TO " + who + ".";
    }
    return {};
}

}  // namespace once
