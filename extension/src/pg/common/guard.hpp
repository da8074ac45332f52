// The C++/PostgreSQL boundary. Two directions, two tools:
//
//  * guarded(): every SQL-callable function runs its C++ body inside it. Any C++ exception
//    becomes ereport(ERROR) with a specific SQLSTATE, raised only after every C++ frame of the
//    body has unwound (so destructors ran and no exception crosses PostgreSQL's C frames).
//
//  * pg_call(): PostgreSQL functions that may ereport (longjmp) are called through it when
//    C++ objects with destructors are alive on the stack. An error is caught with PG_TRY,
//    copied (CopyErrorData) and thrown as PgError, unwinding the C++ frames normally; the
//    boundary re-raises it unchanged, original SQLSTATE and all.
//
// Rules for code in between: never throw inside a PG_TRY block; the callable passed to
// pg_call holds no objects with destructors; destructors never call PostgreSQL functions
// that may ereport (transaction abort cleans up SPI, memory and the user id anyway).
#pragma once

#include "pg/common/postgres_headers.hpp"

#include <exception>
#include <type_traits>
#include <utility>

namespace once::pg {

// A PostgreSQL error caught inside C++ code, carried to the boundary.
class PgError : public std::exception {
public:
    explicit PgError(ErrorData* data) : data_(data) {}
    ErrorData* data() const noexcept { return data_; }
    const char* what() const noexcept override {
        return data_ && data_->message ? data_->message : "PostgreSQL error";
    }

private:
    ErrorData* data_;  // lives in TopTransactionContext until re-raised
};

// Catches a PostgreSQL error raised by f() and throws it as PgError.
void throw_pg_error(MemoryContext caller_context);

// `result` is written inside PG_TRY but only read when no longjmp happened, so the
// -Wclobbered warning does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wclobbered"
template <typename F>
auto pg_call(F&& f) -> decltype(f()) {
    MemoryContext caller_context = CurrentMemoryContext;
    bool failed = false;
    if constexpr (std::is_void_v<decltype(f())>) {
        PG_TRY();
        {
            f();
        }
        PG_CATCH();
        {
            failed = true;
        }
        PG_END_TRY();
        if (failed) throw_pg_error(caller_context);
    } else {
        decltype(f()) result{};
        PG_TRY();
        {
            result = f();
        }
        PG_CATCH();
        {
            failed = true;
        }
        PG_END_TRY();
        if (failed) throw_pg_error(caller_context);
        return result;
    }
}
#pragma GCC diagnostic pop

// Runs body(fcinfo) and converts any exception into a PostgreSQL error. Never returns on error.
Datum guarded(FunctionCallInfo fcinfo, Datum (*body)(FunctionCallInfo));

// The same for code PostgreSQL calls back (transaction callbacks): runs body() and converts
// any exception into a PostgreSQL error after the C++ frames have unwound.
void guarded_callback(void (*body)());

}  // namespace once::pg

// Declares an SQL-callable function `name` whose C++ body is `name##_impl`.
#define ONCE_SQL_FUNCTION(name)                                              \
    static Datum name##_impl(FunctionCallInfo fcinfo);                       \
    extern "C" {                                                             \
    PG_FUNCTION_INFO_V1(name);                                               \
    Datum name(PG_FUNCTION_ARGS) { return once::pg::guarded(fcinfo, name##_impl); } \
    }                                                                        \
    static Datum name##_impl(FunctionCallInfo fcinfo)
