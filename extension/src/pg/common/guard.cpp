#include "pg/common/guard.hpp"

#include "core/error.hpp"
#include "pg/common/sql_version.hpp"
#include "pg/common/sqlstate.hpp"

#include <cstdio>
#include <new>

namespace once::pg {

void throw_pg_error(MemoryContext caller_context) {
    // Still inside the error state: copy the error out of ErrorContext, then clear it.
    // The copy goes to TopTransactionContext: it must outlive SPI contexts that the C++
    // frames being unwound may own; it is freed at transaction end.
    MemoryContextSwitchTo(TopTransactionContext);
    ErrorData* data = CopyErrorData();
    FlushErrorState();
    MemoryContextSwitchTo(caller_context);
    throw PgError(data);
}

namespace {

// What the catch blocks record. Fixed-size buffers: nothing here allocates, so nothing can
// fail while an exception is being handled.
struct PendingError {
    ErrorData* pg = nullptr;
    int sqlstate = 0;
    char message[1024] = {0};
    char detail[1024] = {0};
    char hint[512] = {0};
};

void copy_text(char* dst, size_t size, const char* src) {
    std::snprintf(dst, size, "%s", src ? src : "");
}

// Records the exception being handled (call only from a catch block).
void record_current_exception(PendingError& pending) {
    try {
        throw;
    } catch (const PgError& e) {
        pending.pg = e.data();
    } catch (const once::Error& e) {
        pending.sqlstate = sqlstate_for(e.code());
        copy_text(pending.message, sizeof pending.message, e.what());
        copy_text(pending.detail, sizeof pending.detail, e.detail().c_str());
        copy_text(pending.hint, sizeof pending.hint, e.hint().c_str());
    } catch (const std::bad_alloc&) {
        pending.sqlstate = ERRCODE_OUT_OF_MEMORY;
        copy_text(pending.message, sizeof pending.message, "out of memory in pg_once");
    } catch (const std::exception& e) {
        pending.sqlstate = ERRCODE_INTERNAL_ERROR;
        std::snprintf(pending.message, sizeof pending.message, "pg_once internal error: %s", e.what());
    } catch (...) {
        pending.sqlstate = ERRCODE_INTERNAL_ERROR;
        copy_text(pending.message, sizeof pending.message, "pg_once internal error: unknown exception");
    }
}

// Every C++ frame of the body has unwound; raising (longjmp) is safe now.
[[noreturn]] void raise_pending(const PendingError& pending) {
    if (pending.pg) ReThrowError(pending.pg);
    ereport(ERROR,
            (errcode(pending.sqlstate), errmsg_internal("%s", pending.message),
             pending.detail[0] ? errdetail_internal("%s", pending.detail) : 0,
             pending.hint[0] ? errhint("%s", pending.hint) : 0));
    pg_unreachable();
}

}  // namespace

Datum guarded(FunctionCallInfo fcinfo, Datum (*body)(FunctionCallInfo)) {
    PendingError pending;
    try {
        require_current_sql_version();
        return body(fcinfo);
    } catch (...) {
        record_current_exception(pending);
    }
    raise_pending(pending);
}

void guarded_callback(void (*body)()) {
    PendingError pending;
    try {
        body();
        return;
    } catch (...) {
        record_current_exception(pending);
    }
    raise_pending(pending);
}

}  // namespace once::pg
