// The role that a function pg_once runs on someone's behalf runs as: inbox handlers (called by
// once.deliver) and saga local steps (called by once.saga_tick). Not as the role that calls
// deliver / saga_tick: then the function's owner -- a producer, say -- could replace its body
// after the admin set it up and act with the relay's or the consumer's rights (lease and read
// every other producer's messages).
//
// Such a function runs as the role the admin chose for it (`run_as`, given to
// once.subscribe / once.saga_define), or, when none was chosen, as the function's owner, the
// way a SECURITY DEFINER function does: whoever can rewrite the body already has those rights.
// A chosen role is only accepted while the function's owner is trusted for it: the owner is
// that role, a superuser, or has that role's privileges. Otherwise the owner could rewrite the
// body to act as a role it cannot act as: refused with ON306, when subscribing / defining and
// again at every call (ownership can change). Either way it runs as a restricted operation
// under a pinned search_path (restricted_call.hpp): it cannot change the caller's session.
//
// pg_once's own functions (schema once, e.g. once.saga_reply_handler) run as the caller: they
// check their caller themselves.
#pragma once

#include "pg/common/postgres_headers.hpp"

#include <string_view>

namespace once::pg {

// The role `fn` runs as: `chosen` (InvalidOid: none chosen) or the function's owner;
// InvalidOid for pg_once's own functions (run as the caller). `what` names the function's use
// in errors ("inbox handler", "saga step function"). Throws untrusted_function (ON306) when
// the owner is not trusted for the chosen role, handler_unavailable when `fn` is gone.
Oid function_run_as(Oid fn, Oid chosen, std::string_view what);

// The same, raising a PostgreSQL error instead (plain C: for code inside PG_TRY).
Oid resolve_run_as(Oid fn, Oid chosen, const char* what);

// Runs body() as `role` without a trace in the caller's session (restricted_call.hpp:
// restricted operation, settings rolled back, search_path pinned), restoring the user and the
// settings also when body() raises a PostgreSQL error. InvalidOid: body() runs as the caller,
// unchanged (pg_once's own functions). Plain C inside: call it through pg_call.
void call_as(Oid role, void (*body)(void*), void* arg);

}  // namespace once::pg
