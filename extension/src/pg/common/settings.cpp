// Every once.* setting (GUC) is defined here, in settings_init(), the first thing _PG_init does.
//
// once.saga_retention as a registered setting: as a bare placeholder read with
// current_setting(), any role, a relay included, could SET once.saga_retention = '-100 years'
// and have once.purge() delete sagas that had just finished. Registered, it is PGC_SUSET (a superuser, or a role granted SET on it, sets it
// for others: ALTER SYSTEM / ALTER DATABASE / ALTER ROLE) and bounded below by one minute.
//
// SQL reads it through once._saga_retention(), a C function: calling it loads the library, so
// the setting is registered (and a placeholder value set earlier by an unprivileged role is
// discarded with a warning) before it is used, also in sessions without shared_preload_libraries.
#include "pg/common/settings.hpp"

#include "core/trace_context.hpp"
#include "pg/common/guard.hpp"

extern "C" {
#include "access/xlog.h"  // wal_level
#include "utils/guc.h"
}

#include <climits>
#include <string>

namespace once::pg {
namespace {

constexpr int kDefaultSagaRetentionMinutes = 7 * 24 * 60;
int saga_retention_minutes = kDefaultSagaRetentionMinutes;

// Whoever stores an idempotency key first holds it until it expires, so an unbounded ttl
// lets a role hold a (scope, key) for ever.
constexpr int kDefaultMaxKeyTtlMinutes = 30 * 24 * 60;
constexpr int kMaxMaxKeyTtlMinutes = 3653 * 24 * 60;  // ten years
int max_key_ttl_minutes = kDefaultMaxKeyTtlMinutes;

// once.traceparent / once.tracestate (trace_context.hpp): SET refuses what W3C trace context
// does not allow (22023, with the rule in the detail).
bool check_traceparent(char** value, void**, GucSource) {
    if (*value == nullptr || **value == '\0') return true;
    std::string why;
    if (once::parse_traceparent(*value, &why)) return true;
    GUC_check_errdetail("%s.", why.c_str());
    GUC_check_errhint("Use the W3C form 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, e.g. "
                      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.");
    return false;
}

bool check_tracestate(char** value, void**, GucSource) {
    if (*value == nullptr) return true;
    std::string why;
    if (once::valid_tracestate(*value, &why)) return true;
    GUC_check_errdetail("%s.", why.c_str());
    return false;
}

// 'wal' needs wal_level = logical: at a lower level no slot can decode the message, and a
// message nobody can read is lost. Refusing the value keeps once.send on the table (a session
// whose database or role asks for 'wal' starts with a warning and the default).
bool check_transport(int* value, void**, GucSource) {
    if (*value == static_cast<int>(OutboxTransport::wal) && wal_level < WAL_LEVEL_LOGICAL) {
        GUC_check_errdetail("once.transport = 'wal' requires wal_level = logical.");
        return false;
    }
    return true;
}

const config_enum_entry transport_options[] = {
    {"table", static_cast<int>(OutboxTransport::table), false},
    {"wal", static_cast<int>(OutboxTransport::wal), false},
    {nullptr, 0, false},
};

}  // namespace

char* traceparent_setting = nullptr;
char* tracestate_setting = nullptr;
int max_payload_bytes = 1024 * 1024;
int notify_interval_ms = 1;
int outbox_transport = static_cast<int>(OutboxTransport::table);

void settings_init() {
    DefineCustomIntVariable(
        "once.max_payload_bytes", "Largest outbox payload (jsonb bytes) once.send accepts.",
        "Larger payloads are refused with SQLSTATE ON202.", &max_payload_bytes, 1024 * 1024, 16,
        256 * 1024 * 1024, PGC_SUSET, GUC_UNIT_BYTE, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "once.notify_interval", "Shortest time between two relay wake-ups (NOTIFY once_outbox).",
        "The first commit after a quiet spell wakes relays at once; commits within this window after a wake-up "
        "are coalesced into one at its end. Only with shared_preload_libraries.",
        &notify_interval_ms, 1, 0, 1000, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "once.saga_retention", "How long once.purge() keeps finished sagas and their history.",
        "Completed and compensated sagas older than this are purged. At least one minute.",
        &saga_retention_minutes, kDefaultSagaRetentionMinutes, 1, INT_MAX, PGC_SUSET, GUC_UNIT_MIN,
        nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "once.max_key_ttl", "The longest ttl an idempotency key may be stored with.",
        "once.run and once.key_acquire refuse a longer ttl (22023). At least one minute, at most ten years.",
        &max_key_ttl_minutes, kDefaultMaxKeyTtlMinutes, 1, kMaxMaxKeyTtlMinutes, PGC_SUSET, GUC_UNIT_MIN,
        nullptr, nullptr, nullptr);
    DefineCustomStringVariable(
        "once.traceparent", "W3C traceparent that the messages sent in this transaction or session carry.",
        "Set it with SET LOCAL at the start of a traced transaction; a message with its own traceparent header "
        "keeps that one. once.deliver sets it for its handlers.",
        &traceparent_setting, "", PGC_USERSET, 0, check_traceparent, nullptr, nullptr);
    DefineCustomEnumVariable(
        "once.transport", "Where once.send puts an outbox message: 'table' (once.outbox) or 'wal'.",
        "'wal' writes an unkeyed, undelayed message with no message_id as a logical decoding message (prefix "
        "pg_once) instead of a row; keyed and delayed messages and explicit message ids stay in the table. "
        "Requires wal_level = logical.",
        &outbox_transport, static_cast<int>(OutboxTransport::table), transport_options, PGC_SUSET, 0,
        check_transport, nullptr, nullptr);
    DefineCustomStringVariable("once.tracestate", "W3C tracestate that goes with once.traceparent.", nullptr,
                               &tracestate_setting, "", PGC_USERSET, 0, check_tracestate, nullptr, nullptr);
}

int64 max_key_ttl_ms() { return static_cast<int64>(max_key_ttl_minutes) * 60 * 1000; }

}  // namespace once::pg

ONCE_SQL_FUNCTION(once_saga_retention) {
    return once::pg::pg_call([] {
        Interval* retention = static_cast<Interval*>(palloc0(sizeof(Interval)));
        retention->time = static_cast<int64>(once::pg::saga_retention_minutes) * USECS_PER_MINUTE;
        return IntervalPGetDatum(retention);
    });
}
