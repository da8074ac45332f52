// Runs code that belongs to another role (an inbox handler, a saga local step) in the caller's
// session so that it leaves no trace there, the way PostgreSQL runs owner-supplied code such as
// index expressions or REFRESH MATERIALIZED VIEW:
//
//  * the current user is the role it runs as, with SECURITY_LOCAL_USERID_CHANGE (no SET ROLE
//    back) and SECURITY_RESTRICTED_OPERATION: PostgreSQL then refuses what would outlive the
//    call in the session -- temporary tables, views and sequences, PREPARE / DEALLOCATE,
//    LISTEN / UNLISTEN, DISCARD, CLOSE, cursors WITH HOLD, SET ROLE / SESSION AUTHORIZATION;
//  * settings live in a GUC nest level of their own, rolled back when the call ends (also on
//    error): set_config(..., false) or SET without LOCAL changes nothing after the call;
//  * search_path is pinned to `"$user", public, pg_temp` for the call (pg_catalog implicitly
//    first, "$user" the role the code runs as, pg_temp last so that the caller's temporary
//    tables cannot shadow the owner's). The caller's search_path does not reach the code; a
//    function that needs another path declares it (CREATE FUNCTION ... SET search_path);
//  * any other object it creates in the session's temporary schema (functions, types,
//    operators: PostgreSQL does not refuse those) fails the call with 42501, the SQLSTATE
//    PostgreSQL gives its own refusals above.
//
// What it cannot undo: session-level advisory locks, sequence state (nextval / currval), and a
// cursor it leaves open (not WITH HOLD), which lasts until the caller's transaction ends.
#pragma once

#include "pg/common/postgres_headers.hpp"

namespace once::pg {

// Runs body(arg) as `role` as described above, restoring the user, the security context and
// every setting when it returns or raises. Plain C inside: call it through pg_call.
void call_restricted(Oid role, void (*body)(void*), void* arg);

// Installs the object-access hook that notices temporary objects created during a restricted
// call (chained to the previous hook). Called from _PG_init.
void restricted_call_init();

}  // namespace once::pg
