// once.guard_selftest(mode): proves the C++/PostgreSQL boundary in tests. Each mode fails in
// one way a real function might, and the error must reach SQL with the right SQLSTATE while
// the backend survives. Only once_admin may call it.
#include "core/error.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/spi.hpp"

#include <stdexcept>
#include <string>
#include <vector>

ONCE_SQL_FUNCTION(once_guard_selftest) {
    if (PG_ARGISNULL(0)) throw once::Error(once::ErrorCode::invalid_argument, "mode must not be NULL");
    std::string mode = text_to_cstring(PG_GETARG_TEXT_PP(0));
    std::vector<std::string> alive_during_error{"destructors must run"};  // a C++ object on the stack

    if (mode == "ok") PG_RETURN_TEXT_P(cstring_to_text("ok"));
    if (mode == "cpp_exception") throw std::runtime_error("a C++ exception");
    if (mode == "once_error")
        throw once::Error(once::ErrorCode::invalid_key, "a pg_once error", "its detail", "its hint");
    if (mode == "bad_alloc") throw std::bad_alloc();
    if (mode == "pg_error") {
        // A PostgreSQL error (division by zero, 22012) raised inside SPI under C++ frames.
        once::pg::SpiSession spi;
        int rc = once::pg::pg_call([] { return SPI_execute("SELECT 1/0", true, 1); });
        (void)rc;
        throw std::logic_error("unreachable: SELECT 1/0 returned");
    }
    throw once::Error(once::ErrorCode::invalid_argument, "unknown self-test mode",
                      "mode was \"" + mode + "\"",
                      "Use ok, cpp_exception, once_error, bad_alloc or pg_error.");
}
