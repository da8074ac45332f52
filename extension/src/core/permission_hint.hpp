// The hint added to PostgreSQL's own "permission denied" errors about pg_once's objects
// (pg/common/permission_hint.cpp hooks emit_log_hook when pg_once is preloaded): it names the role
// to grant. A role without any pg_once grant gets "permission denied for schema once"; a
// role with another pg_once role gets "permission denied for function send".
#pragma once

#include <string>
#include <string_view>

namespace once {

// message_id is the untranslated format ("permission denied for schema %s"), message the
// formatted text, role the current user's name. Empty when the error is not about schema
// once or a function of pg_once's API.
std::string permission_hint(std::string_view message_id, std::string_view message, std::string_view role);

// The pg_once role that may call once.<function> ("once_producer" for "send"), or nullptr.
const char* role_for_function(std::string_view function);

}  // namespace once
