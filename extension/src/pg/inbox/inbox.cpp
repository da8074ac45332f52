// Inbox: once.receive, once.deliver, once.inbox_failed, once.subscribe (see docs/inbox.md).
//
// Duplicate detection is one INSERT ... ON CONFLICT DO NOTHING into once.inbox, in the caller's
// transaction. A concurrent caller with the same (source, message_id) waits on the first
// transaction's uncommitted row: when it commits, the conflict makes the second insert a no-op
// (duplicate); when it rolls back, the second insert goes ahead (first time). Under REPEATABLE
// READ a committed-but-invisible conflicting row is a serialization failure, never a second
// processing.
//
// once.deliver runs the handlers directly through fmgr (no SPI round trip per handler), each
// as its subscription's run_as role or its owner (pg/common/run_as.hpp), never as the
// extension owner and never with the rights of the role that called deliver.
// The subscription list is cached per backend and dropped by a relcache invalidation that a
// statement trigger on once.inbox_subscriptions sends on every change.
#include "core/error.hpp"
#include "core/inbox.hpp"
#include "core/topic.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/run_as.hpp"
#include "pg/common/spi.hpp"
#include "pg/common/table_cache.hpp"
#include "pg/common/text_args.hpp"
#include "pg/common/trace_context.hpp"

extern "C" {
#include "catalog/objectaccess.h"
#include "catalog/pg_proc.h"
#include "commands/trigger.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/regproc.h"
#include "utils/typcache.h"
}

#include <string>
#include <vector>

namespace once::pg {
namespace {

text* source_arg(FunctionCallInfo fcinfo, int arg) {
    return validated_text_arg(fcinfo, arg,
                              {ErrorCode::invalid_inbox_source, "inbox source must not be NULL",
                               "Name the system the message comes from, e.g. 'stripe' or 'orders-db'."},
                              validate_inbox_source);
}

const NullArgumentError kNullMessageId{ErrorCode::invalid_message_id, "message id must not be NULL",
                                       "Pass the id the sending system gave the message."};

text* message_id_arg(FunctionCallInfo fcinfo, int arg) {
    return validated_text_arg(fcinfo, arg, kNullMessageId, validate_message_id);
}

// The uuid overload of deliver stores the canonical text form (lower case, hyphens), the
// same text a relay would send through the text overload.
text* uuid_message_id_arg(FunctionCallInfo fcinfo, int arg) {
    if (PG_ARGISNULL(arg))
        throw Error(kNullMessageId.code, kNullMessageId.message, {}, kNullMessageId.hint);
    Datum id = PG_GETARG_DATUM(arg);
    return pg_call([&] { return cstring_to_text(DatumGetCString(DirectFunctionCall1(uuid_out, id))); });
}

text* topic_arg(FunctionCallInfo fcinfo, int arg, bool required) {
    if (!required && PG_ARGISNULL(arg)) return nullptr;
    return validated_text_arg(fcinfo, arg,
                              {ErrorCode::invalid_topic, "topic must not be NULL",
                               "Pass the message's topic, e.g. 'order.created'; handlers are chosen by it."},
                              validate_topic);
}

// ---------------------------------------------------------------------------- receive

SavedPlan receive_plan(
    "INSERT INTO once.inbox (source, message_id, topic) VALUES ($1, $2, $3)"
    " ON CONFLICT (source, message_id) DO NOTHING",
    {TEXTOID, TEXTOID, TEXTOID});

// Why a message was not inserted: a row exists, received (duplicate) or poison.
SavedPlan status_plan(
    "SELECT i.poison FROM once.inbox i"
    " WHERE i.source OPERATOR(pg_catalog.=) $1 AND i.message_id OPERATOR(pg_catalog.=) $2",
    {TEXTOID, TEXTOID});

bool insert_received(SavedPlan& plan, text* source, text* id, text* topic) {
    Datum values[] = {PointerGetDatum(source), PointerGetDatum(id), PointerGetDatum(topic)};
    const char nulls[] = {' ', ' ', topic ? ' ' : 'n'};
    SpiSession spi;
    AsExtensionOwner owner;
    return plan.execute(values, nulls) == 1;
}

// ------------------------------------------------------------------ subscription cache

SavedPlan subscriptions_plan(
    "SELECT s.topic_pattern, s.handler::pg_catalog.oid, s.run_as::pg_catalog.oid"
    "  FROM once.inbox_subscriptions s ORDER BY s.subscribed_at, s.handler::pg_catalog.oid",
    {});

// SPI must be connected.
const std::vector<Subscription>& subscriptions() {
    static CachedTable table("inbox_subscriptions");
    static std::vector<Subscription> cached;
    return table.rows(cached, [] {
        std::vector<Subscription> loaded;
        AsExtensionOwner owner;
        uint64 n = subscriptions_plan.execute(nullptr, nullptr);
        loaded.reserve(n);
        for (uint64 row = 0; row < n; ++row) {
            Datum pattern, handler, run_as;
            spi_value(row, 1, &pattern);
            spi_value(row, 2, &handler);
            bool chosen = spi_value(row, 3, &run_as);
            text* t = DatumGetTextPP(pattern);  // short varlena from a heap tuple: no detoast
            loaded.push_back({std::string(text_view(t)), DatumGetObjectId(handler),
                              chosen ? DatumGetObjectId(run_as) : InvalidOid});
        }
        return loaded;
    });
}

// ------------------------------------------------------------------------- handlers

Oid inbound_type() {
    return pg_call([] {
        Oid nsp = get_namespace_oid("once", false);
        Oid type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("inbound"),
                                   ObjectIdGetDatum(nsp));
        if (!OidIsValid(type)) elog(ERROR, "pg_once: type once.inbound is missing");
        return type;
    });
}

struct Inbound {
    text* source;
    text* message_id;
    text* topic;
    Datum payload;  // 0 = NULL
    Datum headers;  // 0 = NULL
};

Datum inbound_datum(const Inbound& m) {
    Oid type = inbound_type();
    return pg_call([&] {
        TupleDesc desc = lookup_rowtype_tupdesc(type, -1);
        Datum values[5] = {PointerGetDatum(m.source), PointerGetDatum(m.message_id),
                           PointerGetDatum(m.topic), m.payload, m.headers};
        bool nulls[5] = {false, false, false, m.payload == 0, m.headers == 0};
        HeapTuple tuple = heap_form_tuple(desc, values, nulls);
        Datum result = HeapTupleGetDatum(tuple);
        ReleaseTupleDesc(desc);
        return result;
    });
}

struct HandlerCall {
    Oid handler;
    Datum msg;
};

// The call itself, as the role call_as switched to (plain C: see call_as). Direct fmgr calls
// skip the executor's permission check: it is done here, as the executor would for
// SELECT handler(msg), for the role the handler runs as.
void invoke_handler(void* arg) {
    auto* c = static_cast<HandlerCall*>(arg);
    AclResult acl = compat::function_execute_aclcheck(c->handler, GetUserId());
    if (acl != ACLCHECK_OK) aclcheck_error(acl, OBJECT_FUNCTION, get_func_name(c->handler));
    InvokeFunctionExecuteHook(c->handler);
    FmgrInfo flinfo;
    fmgr_info(c->handler, &flinfo);
    LOCAL_FCINFO(call, 1);
    InitFunctionCallInfoData(*call, &flinfo, 1, InvalidOid, nullptr, nullptr);
    call->args[0].value = c->msg;
    call->args[0].isnull = false;
    (void)FunctionCallInvoke(call);
}

// Runs the subscription's handler(msg) as its run_as role or owner. A handler's error
// propagates unchanged.
void call_handler(const Subscription& s, Datum msg) {
    bool exists = pg_call([&] { return SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(s.handler)); });
    if (!exists)
        throw Error(ErrorCode::handler_unavailable, "an inbox handler no longer exists",
                    "A subscription names function oid " + std::to_string(s.handler) +
                        ", which was dropped.",
                    "Remove it with once.unsubscribe(pattern, handler) (see once.inbox_subscriptions) "
                    "or subscribe the recreated function.");
    Oid role = function_run_as(s.handler, s.run_as, "inbox handler");
    HandlerCall c{s.handler, msg};
    pg_call([&] { call_as(role, invoke_handler, &c); });
}

// --------------------------------------------------------------------------- deliver

const char* deliver(text* source, text* id, text* topic, Datum payload, Datum headers) {
    std::vector<Subscription> handlers;
    {
        SpiSession spi;
        handlers = subscriptions_for(subscriptions(), text_view(topic));
        Datum values[] = {PointerGetDatum(source), PointerGetDatum(id), PointerGetDatum(topic)};
        AsExtensionOwner owner;
        // Without a handler nothing is recorded: a later subscription can still process the
        // message. The status tells a relay whether to ack (duplicate) or retry / dead-letter.
        // A poison message has a row too, so one insert detects duplicates and poison alike.
        bool received = !handlers.empty() && receive_plan.execute(values, nullptr) == 1;
        if (!received) {
            Datum poison;
            if (status_plan.execute(values, nullptr, 1) == 1 && spi_value(0, 1, &poison))
                return DatumGetBool(poison) ? "poison" : "duplicate";
            // With handlers, the insert met a conflicting row: a duplicate (whose row a
            // concurrent purge removed right after).
            return handlers.empty() ? "no_handler" : "duplicate";
        }
    }
    Datum msg = inbound_datum({source, id, topic, payload, headers});
    // The handlers continue the message's trace: what they send carries it
    // (pg/common/trace_context.hpp).
    const int trace_level = begin_trace_scope(headers);
    for (const Subscription& s : handlers) call_handler(s, msg);
    end_trace_scope(trace_level);
    return "processed";
}

Datum deliver_entry(FunctionCallInfo fcinfo, text* source, text* id) {
    text* topic = topic_arg(fcinfo, 2, true);
    Datum payload = PG_ARGISNULL(3) ? 0 : PG_GETARG_DATUM(3);
    Datum headers = PG_ARGISNULL(4) ? 0 : PG_GETARG_DATUM(4);
    return text_datum(deliver(source, id, topic, payload, headers));
}

// ---------------------------------------------------------------------------- failed

// Counts the attempt; at the source's max_attempts the message gets a poison row in
// once.inbox (unless it was processed meanwhile), which deliver and receive then meet.
SavedPlan failed_plan(
    "WITH failure AS ("
    "  INSERT INTO once.inbox_failures AS f (source, message_id, attempts, last_error)"
    "  VALUES ($1, $2, 1, $3)"
    "  ON CONFLICT (source, message_id) DO UPDATE"
    "     SET attempts = f.attempts OPERATOR(pg_catalog.+) 1, last_error = excluded.last_error,"
    "         last_failed_at = pg_catalog.now()"
    "  RETURNING f.attempts),"
    " poisoned AS ("
    "  INSERT INTO once.inbox (source, message_id, poison)"
    "  SELECT $1, $2, true FROM failure"
    "   WHERE failure.attempts OPERATOR(pg_catalog.>=) COALESCE("
    "         (SELECT s.max_attempts FROM once.inbox_sources s"
    "           WHERE s.source OPERATOR(pg_catalog.=) $1), 5)"
    "  ON CONFLICT (source, message_id) DO NOTHING)"
    " SELECT attempts FROM failure",
    {TEXTOID, TEXTOID, TEXTOID});

// The same, keeping a copy of the message ($4 topic, $5 payload, $6 headers) for
// once.inbox_retry, and the topic on the poison row.
SavedPlan failed_with_copy_plan(
    "WITH failure AS ("
    "  INSERT INTO once.inbox_failures AS f (source, message_id, attempts, last_error, topic, payload, headers)"
    "  VALUES ($1, $2, 1, $3, $4, $5, $6)"
    "  ON CONFLICT (source, message_id) DO UPDATE"
    "     SET attempts = f.attempts OPERATOR(pg_catalog.+) 1, last_error = excluded.last_error,"
    "         last_failed_at = pg_catalog.now(), topic = excluded.topic, payload = excluded.payload,"
    "         headers = excluded.headers"
    "  RETURNING f.attempts),"
    " poisoned AS ("
    "  INSERT INTO once.inbox (source, message_id, topic, poison)"
    "  SELECT $1, $2, $4, true FROM failure"
    "   WHERE failure.attempts OPERATOR(pg_catalog.>=) COALESCE("
    "         (SELECT s.max_attempts FROM once.inbox_sources s"
    "           WHERE s.source OPERATOR(pg_catalog.=) $1), 5)"
    "  ON CONFLICT (source, message_id) DO NOTHING)"
    " SELECT attempts FROM failure",
    {TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID});

// ------------------------------------------------------------------------- subscribe

SavedPlan subscribe_plan(
    "INSERT INTO once.inbox_subscriptions AS s (topic_pattern, handler, run_as) VALUES ($1, $2, $3)"
    " ON CONFLICT (topic_pattern, handler) DO UPDATE SET run_as = EXCLUDED.run_as"
    "  WHERE NOT COALESCE(s.run_as::pg_catalog.oid OPERATOR(pg_catalog.=) EXCLUDED.run_as::pg_catalog.oid,"
    "                     s.run_as IS NULL AND EXCLUDED.run_as IS NULL)",
    {TEXTOID, REGPROCEDUREOID, REGROLEOID});

// Throws invalid_handler unless `handler` is a plain function taking one once.inbound.
void validate_handler(Oid handler) {
    struct ProcInfo {
        bool found;
        char prokind;
        bool retset;
        int nargs;
        Oid arg0;
        char* name;
    };
    ProcInfo info = pg_call([&] {
        ProcInfo p{};
        HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(handler));
        if (!HeapTupleIsValid(tuple)) return p;
        Form_pg_proc proc = (Form_pg_proc)GETSTRUCT(tuple);
        p.found = true;
        p.prokind = proc->prokind;
        p.retset = proc->proretset;
        p.nargs = proc->pronargs;
        p.arg0 = proc->pronargs > 0 ? proc->proargtypes.values[0] : InvalidOid;
        ReleaseSysCache(tuple);
        p.name = format_procedure(handler);
        return p;
    });
    const std::string hint =
        "A handler is a function taking one argument of type once.inbound, e.g. "
        "CREATE FUNCTION on_order(msg once.inbound) RETURNS void ...";
    if (!info.found)
        throw Error(ErrorCode::invalid_handler, "inbox handler does not exist",
                    "No function has oid " + std::to_string(handler) + ".", hint);
    const std::string name = info.name;
    if (info.prokind != PROKIND_FUNCTION)
        throw Error(ErrorCode::invalid_handler, "inbox handler must be a plain function",
                    name + " is a procedure, aggregate or window function.", hint);
    if (info.retset)
        throw Error(ErrorCode::invalid_handler, "inbox handler must not return a set",
                    name + " returns SETOF.", hint);
    if (info.nargs != 1 || info.arg0 != inbound_type())
        throw Error(ErrorCode::invalid_handler, "inbox handler has the wrong signature",
                    name + " does not take exactly one argument of type once.inbound.", hint);
}

}  // namespace
}  // namespace once::pg

using namespace once;
using namespace once::pg;

ONCE_SQL_FUNCTION(once_receive) {
    text* source = source_arg(fcinfo, 0);
    text* id = message_id_arg(fcinfo, 1);
    text* topic = topic_arg(fcinfo, 2, false);
    PG_RETURN_BOOL(insert_received(receive_plan, source, id, topic));
}

ONCE_SQL_FUNCTION(once_deliver_text) {
    text* source = source_arg(fcinfo, 0);
    return deliver_entry(fcinfo, source, message_id_arg(fcinfo, 1));
}

ONCE_SQL_FUNCTION(once_deliver_uuid) {
    text* source = source_arg(fcinfo, 0);
    return deliver_entry(fcinfo, source, uuid_message_id_arg(fcinfo, 1));
}

// once.inbox_failed(source, id, error) and (source, id, error, topic, payload, headers):
// the second keeps a copy of the message (its topic validated as deliver's).
ONCE_SQL_FUNCTION(once_inbox_failed) {
    text* source = source_arg(fcinfo, 0);
    text* id = message_id_arg(fcinfo, 1);
    const bool with_copy = PG_NARGS() >= 6;
    text* topic = with_copy ? topic_arg(fcinfo, 3, false) : nullptr;
    auto arg = [&](int i) { return PG_ARGISNULL(i) ? Datum(0) : PG_GETARG_DATUM(i); };
    auto null = [&](int i) { return PG_ARGISNULL(i) ? 'n' : ' '; };
    Datum values[] = {PointerGetDatum(source), PointerGetDatum(id), arg(2),
                      topic ? PointerGetDatum(topic) : Datum(0), with_copy ? arg(4) : Datum(0),
                      with_copy ? arg(5) : Datum(0)};
    const char nulls[] = {' ', ' ', null(2), topic ? ' ' : 'n', with_copy ? null(4) : 'n', with_copy ? null(5) : 'n'};
    int32 attempts;
    {
        SpiSession spi;
        AsExtensionOwner owner;
        attempts = (with_copy ? failed_with_copy_plan : failed_plan)
                       .execute_returning_int32(values, nulls, "record the failed attempt");
    }
    PG_RETURN_INT32(attempts);
}

ONCE_SQL_FUNCTION(once_subscribe) {
    text* pattern = validated_text_arg(fcinfo, 0,
                                       {ErrorCode::invalid_topic_pattern, "topic pattern must not be NULL",
                                        "Pass a pattern such as 'order.*' or 'order.>'."},
                                       validate_topic_pattern);
    if (PG_ARGISNULL(1))
        throw Error(ErrorCode::invalid_handler, "inbox handler must not be NULL", {},
                    "Pass the handler as 'schema.function(once.inbound)'.");
    Oid handler = PG_GETARG_OID(1);
    validate_handler(handler);
    const Oid run_as = PG_ARGISNULL(2) ? InvalidOid : PG_GETARG_OID(2);
    (void)function_run_as(handler, run_as, "inbox handler");
    Datum values[] = {PointerGetDatum(pattern), ObjectIdGetDatum(handler), ObjectIdGetDatum(run_as)};
    const char nulls[] = {' ', ' ', OidIsValid(run_as) ? ' ' : 'n'};
    bool added;
    {
        SpiSession spi;
        AsExtensionOwner owner;
        added = subscribe_plan.execute(values, nulls) == 1;
    }
    PG_RETURN_BOOL(added);
}

// Statement trigger on once.inbox_subscriptions: every backend drops its cached list.
ONCE_SQL_FUNCTION(once_inbox_subscriptions_changed) {
    return invalidate_cached_table(fcinfo, "once._inbox_subscriptions_changed");
}
