// Every difference between the PostgreSQL major versions pg_once builds on, in one place. It is
// included by postgres_headers.hpp after the server's headers; no other file of pg_once tests
// PG_VERSION_NUM. Each shim names the release that changed the API, so that dropping a version
// is a matter of deleting its branches here.
#pragma once

#if PG_VERSION_NUM < 150000
#error "pg_once requires PostgreSQL 15 or later"
#endif

extern "C" {
#include "catalog/pg_proc.h"  // ProcedureRelationId
#include "utils/acl.h"
#include "storage/lock.h"
#include "utils/backend_status.h"
#include "replication/message.h"
}

namespace once::pg::compat {

// 18 added an IndexScanInstrumentation* argument (EXPLAIN ANALYZE's index counters); pg_once's
// scans are never instrumented.
inline IndexScanDesc index_beginscan(Relation heap, Relation index, Snapshot snapshot, int nkeys, int norderbys) {
#if PG_VERSION_NUM >= 180000
    return ::index_beginscan(heap, index, snapshot, nullptr, nkeys, norderbys);
#else
    return ::index_beginscan(heap, index, snapshot, nkeys, norderbys);
#endif
}

// 16 replaced the per-catalog pg_*_aclcheck functions with object_aclcheck.
inline AclResult function_execute_aclcheck(Oid function, Oid role) {
#if PG_VERSION_NUM >= 160000
    return object_aclcheck(ProcedureRelationId, function, role, ACL_EXECUTE);
#else
    return pg_proc_aclcheck(function, role, ACL_EXECUTE);
#endif
}

// The status of the idx-th backend (1-based) of the backend-status snapshot. 17 renamed the
// accessor for the index it always took. (16 is untested here: it builds with the older name.)
inline LocalPgBackendStatus* local_backend_status(int idx) {
#if PG_VERSION_NUM >= 170000
    return pgstat_get_local_beentry_by_index(idx);
#else
    return pgstat_fetch_stat_local_beentry(idx);
#endif
}

// Whether two lock-table entries (GetLockStatusData) belong to the same virtual transaction. 17
// made the entry's backend id and local xid one VirtualTransactionId (vxid) when it replaced
// backend ids with proc numbers; 15 has the two fields. (16 is untested here.)
inline bool same_virtual_transaction(const LockInstanceData& a, const LockInstanceData& b) {
#if PG_VERSION_NUM >= 170000
    return VirtualTransactionIdEquals(a.vxid, b.vxid);
#else
    return a.backend == b.backend && a.lxid == b.lxid;
#endif
}

// A logical decoding message in the WAL (the WAL transport, pg/outbox/outbox_wal_send.cpp).
// 17 added `flush` (flush the WAL at once, for non-transactional messages); a transactional
// message is flushed by its transaction's commit, so pg_once never asks for it.
inline XLogRecPtr log_logical_message(const char* prefix, const char* data, size_t size, bool transactional) {
#if PG_VERSION_NUM >= 170000
    return LogLogicalMessage(prefix, data, size, transactional, false);
#else
    return LogLogicalMessage(prefix, data, size, transactional);
#endif
}

}  // namespace once::pg::compat

// 18 lets a module name itself and its version in its magic block (shown by
// pg_get_loaded_modules()); older servers have the plain block.
#if PG_VERSION_NUM >= 180000
#define ONCE_MODULE_MAGIC PG_MODULE_MAGIC_EXT(.name = "pg_once", .version = ONCE_VERSION)
#else
#define ONCE_MODULE_MAGIC PG_MODULE_MAGIC
#endif
