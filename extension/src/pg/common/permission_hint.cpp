#include "pg/common/permission_hint.hpp"

#include "pg/common/postgres_headers.hpp"
extern "C" {
#include "utils/guc.h"
}

#include "core/permission_hint.hpp"

namespace once::pg {

namespace {

emit_log_hook_type previous_hook = nullptr;

// Runs inside error reporting: no error may escape, and everything it allocates is in
// ErrorContext (freed with the error data). Only ERRORs with SQLSTATE 42501, no hint yet and
// an untranslated message id are looked at. The role is named without a catalog lookup (which
// could fail inside error reporting): the session user's name when the current user is the
// session user, as for a client that logged in as alice; "<role>" under SET ROLE or SECURITY DEFINER.
void add_permission_hint(ErrorData* edata) {
    if (edata->elevel != ERROR || edata->sqlerrcode != ERRCODE_INSUFFICIENT_PRIVILEGE || edata->hint != nullptr ||
        edata->message_id == nullptr || edata->message == nullptr)
        return;
    MemoryContext old = MemoryContextSwitchTo(ErrorContext);
    try {
        // The rule first: most 42501 errors are about other objects and need no role at all.
        if (!once::permission_hint(edata->message_id, edata->message, "").empty()) {
            // session_authorization holds the session user's name (set at login, no lookup); a
            // process without a user (a background worker) names none.
            Oid current = InvalidOid;
            int sec_context = 0;
            GetUserIdAndSecContext(&current, &sec_context);
            const char* role = OidIsValid(current) && current == GetSessionUserId()
                                   ? GetConfigOption("session_authorization", true, false)
                                   : nullptr;
            std::string hint = once::permission_hint(edata->message_id, edata->message, role ? role : "");
            edata->hint = pstrdup(hint.c_str());
        }
    } catch (...) {
        // no hint rather than an error while reporting one
    }
    MemoryContextSwitchTo(old);
}

void emit_log(ErrorData* edata) {
    add_permission_hint(edata);
    if (previous_hook) previous_hook(edata);
}

}  // namespace

void permission_hint_init() {
    previous_hook = emit_log_hook;
    emit_log_hook = emit_log;
}

}  // namespace once::pg
