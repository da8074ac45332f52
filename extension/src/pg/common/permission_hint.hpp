// Adds a HINT naming the role to grant to PostgreSQL's "permission denied" errors about
// schema once and pg_once's functions (the rule: core/permission_hint.hpp).
#pragma once

namespace once::pg {

// Installs the emit_log_hook (chained to the previous one). Effective in every backend when
// pg_once is in shared_preload_libraries; otherwise only in backends that loaded pg_once, which
// a role without grants never does.
void permission_hint_init();

}  // namespace once::pg
