// Idempotency keys: once.run (in-transaction) and once.key_acquire / key_checkpoint /
// key_complete / key_release (across transactions, for work with outside side effects).
//
// Concurrency: every function first takes a transaction-scoped lock on hash(scope, key, owner)
// for the row it uses (locks.hpp: an advisory lock tag SQL's pg_advisory_lock cannot reach),
// then reads the row. A second caller with the same key in the same namespace therefore waits
// for the first transaction and, under READ COMMITTED, sees its outcome: the stored response
// if it committed, nothing if it rolled back. Another role's transaction never holds the lock
// of a caller's own namespace, so it cannot stall the caller's keys. Under REPEATABLE
// READ the final INSERT ... ON CONFLICT reports a serialization failure instead of running
// the command twice. The lock costs no WAL and no extra row version, unlike claiming the key
// with an INSERT and updating it with the response afterwards.
//
// Namespaces: a key's identity is (scope, key, owner), owner being the role that stored it;
// which row a call uses is core/key_namespace.hpp's rule, see resolve().
#include "core/error.hpp"
#include "core/key_namespace.hpp"
#include "core/key_validation.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/locks.hpp"
#include "pg/common/settings.hpp"
#include "pg/common/spi.hpp"
#include "pg/common/text_args.hpp"
#include "pg/idempotency/command_runner.hpp"
#include "pg/idempotency/fingerprint.hpp"

extern "C" {
#include "utils/acl.h"
}

#include <algorithm>
#include <string>
#include <vector>

namespace once::pg {
namespace {

struct KeyArgs {
    text* scope;
    text* key;
};

KeyArgs key_args(FunctionCallInfo fcinfo) {
    KeyArgs args{required_text_arg(fcinfo, 0, {ErrorCode::invalid_key, "idempotency scope must not be NULL", ""}),
                 required_text_arg(fcinfo, 1, {ErrorCode::invalid_key, "idempotency key must not be NULL", ""})};
    validate_key("idempotency scope", text_view(args.scope));
    validate_key("idempotency key", text_view(args.key));
    return args;
}

// Locks (scope, key) in owner's namespace (InvalidOid: the shared rows stored by 0.1).
void lock_key(const KeyArgs& args, Oid owner) {
    uint32 hash = pg_call([&] {
        uint32 scope_hash = hash_bytes(reinterpret_cast<const unsigned char*>(VARDATA_ANY(args.scope)),
                                       static_cast<int>(VARSIZE_ANY_EXHDR(args.scope)));
        uint32 key_hash = hash_bytes(reinterpret_cast<const unsigned char*>(VARDATA_ANY(args.key)),
                                     static_cast<int>(VARSIZE_ANY_EXHDR(args.key)));
        return hash_combine(hash_combine(scope_hash, key_hash), hash_bytes_uint32(owner));
    });
    lock_transaction(LockClass::idempotency_key, hash);  // unreachable from SQL (locks.hpp)
}

// A positive interval, or an error naming the argument; checked as it is applied (now() +
// value, calendar months), and at most max_ms when max_ms > 0.
Interval* positive_interval(FunctionCallInfo fcinfo, int arg, const char* name, int64 max_ms = 0,
                            const char* max_setting = nullptr) {
    if (PG_ARGISNULL(arg))
        throw Error(ErrorCode::invalid_argument, std::string(name) + " must not be NULL");
    Interval* value = PG_GETARG_INTERVAL_P(arg);
    std::optional<int64_t> ms = applied_interval_ms(value);
    if (!ms || *ms <= 0)
        throw Error(ErrorCode::invalid_argument, std::string(name) + " must be positive",
                    ms ? std::string() : "now() + " + std::string(name) + " is not a finite timestamp.",
                    "Pass an interval such as '24 hours'.");
    if (max_ms > 0 && *ms > max_ms)
        throw Error(ErrorCode::invalid_argument, std::string(name) + " is longer than " + max_setting + " allows",
                    std::string(name) + " lasts " + std::to_string(*ms / 1000) + " s from now; " + max_setting +
                        " is " + std::to_string(max_ms / 1000) + " s.",
                    std::string("Pass a shorter ") + name + ", or ask a superuser to raise " + max_setting + ".");
    return value;
}

// The optional fencing token of key_checkpoint / key_complete / key_release.
Datum optional_attempt(FunctionCallInfo fcinfo, int arg, char* null_flag) {
    *null_flag = PG_ARGISNULL(arg) ? 'n' : ' ';
    return PG_ARGISNULL(arg) ? 0 : PG_GETARG_DATUM(arg);
}

// The blessed descriptor of a function's OUT parameters, built once per call site and kept in
// fn_extra (resolving it costs more than the rest of a replay).
TupleDesc result_descriptor(FunctionCallInfo fcinfo) {
    if (fcinfo->flinfo->fn_extra == nullptr) {
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "pg_once: function must be declared with OUT parameters");
        MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
        desc = BlessTupleDesc(CreateTupleDescCopy(desc));
        MemoryContextSwitchTo(old);
        fcinfo->flinfo->fn_extra = desc;
    }
    return static_cast<TupleDesc>(fcinfo->flinfo->fn_extra);
}

// A composite result built in the caller's memory context after SPI has finished.
template <int N>
struct ResultRow {
    Datum values[N] = {};
    bool nulls[N] = {};
    void set_null(int i) { nulls[i] = true; }
    Datum to_datum(FunctionCallInfo fcinfo) {
        return pg_call([&] {
            return HeapTupleGetDatum(heap_form_tuple(result_descriptor(fcinfo), values, nulls));
        });
    }
};

// The stored state of a key, read under the key's lock. By-reference values are copied to
// the caller's context so they outlive the SPI connection.
struct KeyRow {
    bool found = false;
    bool expired = false;
    bool lease_active = false;
    bool done = false;
    bool fingerprint_matches = false;
    bool has_response = false, has_status = false, has_recovery_point = false, has_checkpoint = false;
    Datum response = 0, status = 0, recovery_point = 0, checkpoint = 0;
    int32 attempt = 0;
    Oid owner = InvalidOid;  // InvalidOid: a key stored by 0.1, shared until it expires
};

// Reads the rows of (scope, key), one per owner, with a direct probe of the primary key index
// (scope, key, owner): no SPI, no executor, no permission check (pg_once's own table). This is
// most of a replay's cost, so it matters. The snapshot is taken after the key's lock was
// granted, so under READ COMMITTED it sees the outcome of the transaction we waited for.
// Stored values are copied to the current context.
std::vector<KeyRow> lookup(const KeyArgs& args, bytea* fingerprint) {
    std::vector<KeyRow> rows;
    pg_call([&] {
        Oid schema = get_namespace_oid("once", false);
        Oid table_id = get_relname_relid("keys", schema);
        Oid index_id = get_relname_relid("keys_pkey", schema);
        if (!OidIsValid(table_id) || !OidIsValid(index_id))
            elog(ERROR, "pg_once: table once.keys or its primary key is missing");
        Relation table = table_open(table_id, AccessShareLock);
        Relation index = index_open(index_id, AccessShareLock);
        ScanKeyData scan_keys[2];
        ScanKeyEntryInitialize(&scan_keys[0], 0, 1, BTEqualStrategyNumber, InvalidOid,
                               index->rd_indcollation[0], F_TEXTEQ, PointerGetDatum(args.scope));
        ScanKeyEntryInitialize(&scan_keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
                               index->rd_indcollation[1], F_TEXTEQ, PointerGetDatum(args.key));
        Snapshot snapshot = RegisterSnapshot(GetTransactionSnapshot());
        IndexScanDesc scan = compat::index_beginscan(table, index, snapshot, 2, 0);
        index_rescan(scan, scan_keys, 2, nullptr, 0);
        TupleTableSlot* slot = table_slot_create(table, nullptr);
        while (index_getnext_slot(scan, ForwardScanDirection, slot)) {
            KeyRow& row = rows.emplace_back();
            slot_getallattrs(slot);
            TupleDesc desc = RelationGetDescr(table);
            const TimestampTz now = GetCurrentTransactionStartTimestamp();  // = now()
            auto column = [&](const char* name, bool* isnull) -> Datum {
                for (int i = 0; i < desc->natts; ++i) {
                    Form_pg_attribute attribute = TupleDescAttr(desc, i);
                    if (!attribute->attisdropped && strcmp(NameStr(attribute->attname), name) == 0) {
                        *isnull = slot->tts_isnull[i];
                        return slot->tts_values[i];
                    }
                }
                elog(ERROR, "pg_once: once.keys has no column %s", name);
                return 0;
            };
            auto copied = [&](const char* name, Datum* out) {
                bool isnull;
                Datum value = column(name, &isnull);
                if (!isnull) *out = PointerGetDatum(PG_DETOAST_DATUM_COPY(value));
                return !isnull;
            };
            bool isnull;
            row.found = true;
            if (fingerprint != nullptr) {
                bytea* stored = DatumGetByteaPP(column("fingerprint", &isnull));
                row.fingerprint_matches =
                    VARSIZE_ANY_EXHDR(stored) == VARSIZE_ANY_EXHDR(fingerprint) &&
                    memcmp(VARDATA_ANY(stored), VARDATA_ANY(fingerprint), VARSIZE_ANY_EXHDR(fingerprint)) == 0;
            }
            Datum owner = column("owner", &isnull);
            row.owner = isnull ? InvalidOid : DatumGetObjectId(owner);
            text* state = DatumGetTextPP(column("state", &isnull));
            row.done = VARSIZE_ANY_EXHDR(state) == 4 && memcmp(VARDATA_ANY(state), "done", 4) == 0;
            row.has_response = copied("response", &row.response);
            row.status = column("status", &isnull);
            row.has_status = !isnull;
            row.has_recovery_point = copied("recovery_point", &row.recovery_point);
            row.has_checkpoint = copied("checkpoint", &row.checkpoint);
            row.attempt = DatumGetInt32(column("attempt", &isnull));
            Datum locked_until = column("locked_until", &isnull);
            row.lease_active = !isnull && DatumGetTimestampTz(locked_until) > now;
            row.expired = DatumGetTimestampTz(column("expires_at", &isnull)) <= now;
        }
        ExecDropSingleTupleTableSlot(slot);
        index_endscan(scan);
        UnregisterSnapshot(snapshot);
        index_close(index, NoLock);
        table_close(table, NoLock);  // locks are kept to the end of the transaction, as usual
    });
    return rows;
}

// The row a call uses (row.found false: none, the call stores a row of its own) and the
// namespace it writes: the row's owner, or the caller's own when there is no row.
struct Resolved {
    KeyRow row;
    Oid target;
};

// Applies core/key_namespace.hpp's rule: the caller's own row, else the one row of a role
// whose privileges it has, else a row stored by 0.1. Rows of other roles are invisible, so no
// role can squat another's key. The caller's namespace is locked first;
// when the rule picks a row of another namespace, that namespace is locked too and the rows
// are read again (the row may have changed while we waited), until the chosen row's namespace
// is locked. Each round locks a new owner, so this ends.
Resolved resolve(const KeyArgs& args, bytea* fingerprint) {
    const Oid caller = GetUserId();
    std::vector<Oid> locked{caller};
    lock_key(args, caller);
    for (;;) {
        std::vector<KeyRow> rows = lookup(args, fingerprint);
        std::vector<StoredKey> stored;
        stored.reserve(rows.size());
        for (const KeyRow& row : rows) stored.push_back({row.owner, row.expired});
        KeyChoice choice = choose_key(stored, caller, [&](uint32_t owner) {
            return pg_call([&] { return has_privs_of_role(caller, owner); });
        });
        if (choice.kind == KeyChoice::ambiguous)
            throw Error(ErrorCode::key_ambiguous,
                        "idempotency key was stored by several roles whose privileges the current role has",
                        "The current role has no key of its own with this scope and key, and inherits "
                        "from more than one role that has.",
                        "SET LOCAL ROLE to the role whose key you mean (README \"Who may use a key\").");
        if (choice.kind == KeyChoice::none) return {KeyRow{}, caller};
        const KeyRow& row = rows[choice.index];
        if (std::find(locked.begin(), locked.end(), row.owner) != locked.end()) return {row, row.owner};
        lock_key(args, row.owner);
        locked.push_back(row.owner);
    }
}

// Before writing to a row stored by 0.1 (no owner), the caller makes it its own:
// first removing its own expired row of the same key, which would otherwise collide.
SavedPlan drop_expired_own_plan(
    "DELETE FROM once.keys"
    " WHERE scope OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2"
    "   AND owner OPERATOR(pg_catalog.=) $3 AND expires_at OPERATOR(pg_catalog.<=) pg_catalog.now()",
    {TEXTOID, TEXTOID, OIDOID});

SavedPlan claim_ownerless_plan(
    "UPDATE once.keys SET owner = $3"
    " WHERE scope OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2"
    "   AND owner OPERATOR(pg_catalog.=) 0::pg_catalog.oid",
    {TEXTOID, TEXTOID, OIDOID});

// Makes the resolved row the caller's when it has no owner; returns the namespace to write.
// Needs an SPI connection.
Oid claim_if_ownerless(const KeyArgs& args, const Resolved& resolved) {
    if (!resolved.row.found || OidIsValid(resolved.target)) return resolved.target;
    const Oid caller = GetUserId();
    Datum values[] = {PointerGetDatum(args.scope), PointerGetDatum(args.key), ObjectIdGetDatum(caller)};
    AsExtensionOwner owner;
    drop_expired_own_plan.execute(values, nullptr);
    if (claim_ownerless_plan.execute(values, nullptr) != 1)
        throw Error(ErrorCode::internal, "could not take over the idempotency key stored by 0.1");
    return caller;
}

[[noreturn]] void throw_mismatch() {
    throw Error(ErrorCode::request_mismatch,
                "idempotency key was already used with a different request",
                "The request's fingerprint differs from the one stored with this key.",
                "Use a new idempotency key for a new request.");
}

[[noreturn]] void throw_busy(int32 attempt) {
    throw Error(ErrorCode::key_busy, "idempotency key is in progress in another request",
                "Attempt " + std::to_string(attempt) + " holds the key's lease.",
                "Retry later: the lease ends when that request completes, releases the key or "
                "expires.");
}

[[noreturn]] void throw_not_held(const char* function) {
    throw Error(ErrorCode::key_not_held,
                std::string(function) + ": idempotency key is not held by this attempt",
                "The key is absent, expired, already completed, or its lease was taken over "
                "by a later attempt.",
                "Call once.key_acquire first; pass the attempt it returned to detect takeovers.");
}

// ---------------------------------------------------------------------------------- once.run

struct RunOutcome {
    bool replayed = false;
    bool has_response = false;
    Datum response = 0;
};

SavedPlan store_result_plan(
    "INSERT INTO once.keys AS k (scope, key, fingerprint, state, response, status, expires_at, owner)"
    " VALUES ($1, $2, $3, 'done', $4, 200, pg_catalog.now() OPERATOR(pg_catalog.+) $5, $6)"
    " ON CONFLICT (scope, key, owner) DO UPDATE"
    "   SET fingerprint = excluded.fingerprint, state = 'done', response = excluded.response,"
    "       status = 200, recovery_point = NULL, checkpoint = NULL, attempt = 1, lease = NULL,"
    "       locked_until = NULL, created_at = pg_catalog.now(), expires_at = excluded.expires_at"
    " WHERE k.expires_at OPERATOR(pg_catalog.<=) pg_catalog.now()"
    "    OR k.locked_until OPERATOR(pg_catalog.<=) pg_catalog.now()",
    {TEXTOID, TEXTOID, BYTEAOID, JSONBOID, INTERVALOID, OIDOID});

RunOutcome run_once(const KeyArgs& args, Jsonb* request, text* command, Interval* ttl) {
    bytea* fingerprint = request_fingerprint(request);
    Resolved resolved = resolve(args, fingerprint);
    const KeyRow& row = resolved.row;
    if (row.found) {
        if (!row.fingerprint_matches) throw_mismatch();
        if (row.done) return {true, row.has_response, row.response};
        if (row.lease_active) throw_busy(row.attempt);
        // Otherwise the lease of a crashed key_acquire caller expired: this call takes over.
    }

    SpiSession spi;
    RunOutcome outcome;
    Datum response = 0;
    const Oid target = claim_if_ownerless(args, resolved);
    outcome.has_response = run_command(command, request, &response);  // as the caller
    Datum values[] = {PointerGetDatum(args.scope), PointerGetDatum(args.key),
                      PointerGetDatum(fingerprint), response, IntervalPGetDatum(ttl),
                      ObjectIdGetDatum(target)};
    const char nulls[] = {' ', ' ', ' ', outcome.has_response ? ' ' : 'n', ' ', ' '};
    uint64 stored;
    {
        AsExtensionOwner owner;
        stored = store_result_plan.execute(values, nulls);
    }
    if (stored != 1)
        throw Error(ErrorCode::internal, "idempotency key changed while its command ran",
                    "The command itself probably used the same scope and key.");
    if (outcome.has_response) outcome.response = spi.copy_out(response, false, -1);
    return outcome;
}

// ------------------------------------------------------------------------- once.key_acquire

SavedPlan acquire_plan(
    "INSERT INTO once.keys AS k (scope, key, fingerprint, state, attempt, lease, locked_until, expires_at, owner)"
    " VALUES ($1, $2, $3, 'in_progress', 1, $4, pg_catalog.now() OPERATOR(pg_catalog.+) $4,"
    "         pg_catalog.now() OPERATOR(pg_catalog.+) $5, $6)"
    " ON CONFLICT (scope, key, owner) DO UPDATE"
    "   SET fingerprint = excluded.fingerprint, state = 'in_progress', response = NULL,"
    "       status = NULL, recovery_point = NULL, checkpoint = NULL, attempt = 1,"
    "       lease = excluded.lease, locked_until = excluded.locked_until,"
    "       created_at = pg_catalog.now(), expires_at = excluded.expires_at"
    " WHERE k.expires_at OPERATOR(pg_catalog.<=) pg_catalog.now()",
    {TEXTOID, TEXTOID, BYTEAOID, INTERVALOID, INTERVALOID, OIDOID});

SavedPlan takeover_plan(
    "UPDATE once.keys"
    "   SET attempt = attempt OPERATOR(pg_catalog.+) 1, lease = $3,"
    "       locked_until = pg_catalog.now() OPERATOR(pg_catalog.+) $3"
    " WHERE scope OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2"
    "   AND owner OPERATOR(pg_catalog.=) $4"
    " RETURNING attempt",
    {TEXTOID, TEXTOID, INTERVALOID, OIDOID});

enum AcquireColumn { kState, kResponse, kRecoveryPoint, kAttempt, kStatus, kCheckpoint, kAcquireColumns };

}  // namespace
}  // namespace once::pg

using namespace once;
using namespace once::pg;

ONCE_SQL_FUNCTION(once_run) {
    KeyArgs args = key_args(fcinfo);
    Jsonb* request = PG_ARGISNULL(2) ? nullptr : PG_GETARG_JSONB_P(2);
    if (PG_ARGISNULL(3)) throw Error(ErrorCode::invalid_argument, "command must not be NULL");
    text* command = PG_GETARG_TEXT_PP(3);
    Interval* ttl = positive_interval(fcinfo, 4, "ttl", max_key_ttl_ms(), "once.max_key_ttl");

    RunOutcome outcome = run_once(args, request, command, ttl);
    ResultRow<2> result;
    result.values[0] = BoolGetDatum(outcome.replayed);
    if (outcome.has_response) result.values[1] = outcome.response;
    else result.set_null(1);
    return result.to_datum(fcinfo);
}

ONCE_SQL_FUNCTION(once_key_acquire) {
    KeyArgs args = key_args(fcinfo);
    Jsonb* request = PG_ARGISNULL(2) ? nullptr : PG_GETARG_JSONB_P(2);
    Interval* lease = positive_interval(fcinfo, 3, "lease");
    Interval* ttl = positive_interval(fcinfo, 4, "ttl", max_key_ttl_ms(), "once.max_key_ttl");

    ResultRow<kAcquireColumns> result;
    for (int i = 0; i < kAcquireColumns; ++i) result.set_null(i);
    auto set = [&](int column, Datum value) { result.values[column] = value; result.nulls[column] = false; };
    const char* state;
    {
        bytea* fingerprint = request_fingerprint(request);
        Resolved resolved = resolve(args, fingerprint);
        const KeyRow& row = resolved.row;
        SpiSession spi;
        if (!row.found) {
            Datum values[] = {PointerGetDatum(args.scope), PointerGetDatum(args.key),
                              PointerGetDatum(fingerprint), IntervalPGetDatum(lease),
                              IntervalPGetDatum(ttl), ObjectIdGetDatum(resolved.target)};
            AsExtensionOwner owner;
            if (acquire_plan.execute(values, nullptr) != 1)
                throw Error(ErrorCode::internal, "could not insert the idempotency key");
            state = "acquired";
            set(kAttempt, Int32GetDatum(1));
        } else if (!row.fingerprint_matches) {
            throw_mismatch();
        } else if (row.done) {
            state = "replay";
            if (row.has_response) set(kResponse, row.response);
            if (row.has_status) set(kStatus, row.status);
            set(kAttempt, Int32GetDatum(row.attempt));
        } else if (row.lease_active) {
            state = "busy";
            set(kAttempt, Int32GetDatum(row.attempt));
        } else {
            // The holder's lease expired (it crashed or hung): take over, resuming from its
            // last checkpoint. A key stored by 0.1 becomes the taker's.
            Datum values[] = {PointerGetDatum(args.scope), PointerGetDatum(args.key),
                              IntervalPGetDatum(lease), ObjectIdGetDatum(claim_if_ownerless(args, resolved))};
            int32 attempt;
            {
                AsExtensionOwner owner;
                attempt = takeover_plan.execute_returning_int32(values, nullptr, "take over the idempotency key");
            }
            state = "acquired";
            set(kAttempt, Int32GetDatum(attempt));
            if (row.has_recovery_point) set(kRecoveryPoint, row.recovery_point);
            if (row.has_checkpoint) set(kCheckpoint, row.checkpoint);
        }
    }
    set(kState, text_datum(state));
    return result.to_datum(fcinfo);
}

namespace {

SavedPlan checkpoint_plan(
    "UPDATE once.keys"
    "   SET recovery_point = $3, checkpoint = $4,"
    "       locked_until = pg_catalog.now() OPERATOR(pg_catalog.+) lease"
    " WHERE scope OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2"
    "   AND owner OPERATOR(pg_catalog.=) $6"
    "   AND state OPERATOR(pg_catalog.=) 'in_progress'"
    "   AND expires_at OPERATOR(pg_catalog.>) pg_catalog.now()"
    "   AND ($5::pg_catalog.int4 IS NULL OR attempt OPERATOR(pg_catalog.=) $5)",
    {TEXTOID, TEXTOID, TEXTOID, JSONBOID, INT4OID, OIDOID});

SavedPlan complete_plan(
    "UPDATE once.keys"
    "   SET state = 'done', response = $3, status = $4, locked_until = NULL"
    " WHERE scope OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2"
    "   AND owner OPERATOR(pg_catalog.=) $6"
    "   AND state OPERATOR(pg_catalog.=) 'in_progress'"
    "   AND expires_at OPERATOR(pg_catalog.>) pg_catalog.now()"
    "   AND ($5::pg_catalog.int4 IS NULL OR attempt OPERATOR(pg_catalog.=) $5)",
    {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, OIDOID});

SavedPlan release_plan(
    "DELETE FROM once.keys"
    " WHERE scope OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2"
    "   AND owner OPERATOR(pg_catalog.=) $4"
    "   AND state OPERATOR(pg_catalog.=) 'in_progress'"
    "   AND ($3::pg_catalog.int4 IS NULL OR attempt OPERATOR(pg_catalog.=) $3)",
    {TEXTOID, TEXTOID, INT4OID, OIDOID});

// Checkpoint, complete and release change only the row the caller resolves to (its own, an
// inherited one, or one stored by 0.1): the attempt number is optional, so without this any
// producer could finish or drop another's key. The plan's last parameter is the namespace
// written; complete makes a row stored by 0.1 the caller's first.
uint64 execute_locked(const KeyArgs& args, SavedPlan& plan, Datum* values, const char* nulls, int owner_param,
                      bool claim) {
    Resolved resolved = resolve(args, nullptr);
    SpiSession spi;
    values[owner_param] = ObjectIdGetDatum(claim ? claim_if_ownerless(args, resolved) : resolved.target);
    AsExtensionOwner owner;
    return plan.execute(values, nulls);
}

}  // namespace

ONCE_SQL_FUNCTION(once_key_checkpoint) {
    KeyArgs args = key_args(fcinfo);
    if (PG_ARGISNULL(2))
        throw Error(ErrorCode::invalid_argument, "recovery_point must not be NULL",
                    {}, "Name the last finished phase, e.g. 'payment_captured'.");
    Datum values[6] = {PointerGetDatum(args.scope), PointerGetDatum(args.key), PG_GETARG_DATUM(2),
                       PG_ARGISNULL(3) ? 0 : PG_GETARG_DATUM(3), 0, 0};
    char nulls[6] = {' ', ' ', ' ', PG_ARGISNULL(3) ? 'n' : ' ', ' ', ' '};
    values[4] = optional_attempt(fcinfo, 4, &nulls[4]);
    if (execute_locked(args, checkpoint_plan, values, nulls, 5, false) != 1) throw_not_held("once.key_checkpoint");
    PG_RETURN_VOID();
}

ONCE_SQL_FUNCTION(once_key_complete) {
    KeyArgs args = key_args(fcinfo);
    if (PG_ARGISNULL(3))
        throw Error(ErrorCode::invalid_argument, "status must not be NULL", {},
                    "Pass the HTTP-style status of the response, e.g. 200 or 500.");
    int32 status = PG_GETARG_INT32(3);
    if (status < 100 || status > 599)
        throw Error(ErrorCode::invalid_argument, "status must be between 100 and 599",
                    "status was " + std::to_string(status) + ".");
    Datum values[6] = {PointerGetDatum(args.scope), PointerGetDatum(args.key),
                       PG_ARGISNULL(2) ? 0 : PG_GETARG_DATUM(2), Int32GetDatum(status), 0, 0};
    char nulls[6] = {' ', ' ', PG_ARGISNULL(2) ? 'n' : ' ', ' ', ' ', ' '};
    values[4] = optional_attempt(fcinfo, 4, &nulls[4]);
    if (execute_locked(args, complete_plan, values, nulls, 5, true) != 1) throw_not_held("once.key_complete");
    PG_RETURN_VOID();
}

ONCE_SQL_FUNCTION(once_key_release) {
    KeyArgs args = key_args(fcinfo);
    Datum values[4] = {PointerGetDatum(args.scope), PointerGetDatum(args.key), 0, 0};
    char nulls[4] = {' ', ' ', ' ', ' '};
    values[2] = optional_attempt(fcinfo, 2, &nulls[2]);
    PG_RETURN_BOOL(execute_locked(args, release_plan, values, nulls, 3, false) == 1);
}

// once._key_release_owned(scope, key, owner): once.key_release of the row in one namespace
// (owner 0: a key stored by 0.1), without resolving the caller's. once.console_key_release
// calls it: the console's admin holds none of the keys and names the row it releases, which
// key_release cannot address when several roles stored (scope, key) (ON106). Same lock on
// (scope, key, owner), same DELETE of an in-progress row.
ONCE_SQL_FUNCTION(once_key_release_owned) {
    KeyArgs args = key_args(fcinfo);
    if (PG_ARGISNULL(2))
        throw Error(ErrorCode::invalid_argument, "owner must not be NULL", {},
                    "Pass the oid of the key's owner (once.keys.owner; 0 for a key stored by 0.1).");
    const Oid owner = PG_GETARG_OID(2);
    lock_key(args, owner);
    Datum values[4] = {PointerGetDatum(args.scope), PointerGetDatum(args.key), 0, ObjectIdGetDatum(owner)};
    char nulls[4] = {' ', ' ', 'n', ' '};
    SpiSession spi;
    AsExtensionOwner as_owner;
    PG_RETURN_BOOL(release_plan.execute(values, nulls) == 1);
}

ONCE_SQL_FUNCTION(once_request_fingerprint) {
    Jsonb* request = PG_ARGISNULL(0) ? nullptr : PG_GETARG_JSONB_P(0);
    PG_RETURN_BYTEA_P(request_fingerprint(request));
}
