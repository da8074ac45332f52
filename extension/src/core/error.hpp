// Errors raised by pure pg_once logic. The PostgreSQL boundary maps each code to its own
// SQLSTATE (extension/src/pg/common/sqlstate.cpp), so core code never needs a PostgreSQL header.
#pragma once

#include <stdexcept>
#include <string>

namespace once {

// One enumerator per line of sqlstates.def, which also holds each one's SQLSTATE.
enum class ErrorCode {
#define ONCE_ERROR(name, sqlstate, http) name,
#include "sqlstates.def"
#undef ONCE_ERROR
};

// The SQLSTATE of `code`: five characters, class "ON" for pg_once's own.
constexpr const char* sqlstate_of(ErrorCode code) {
    switch (code) {
#define ONCE_ERROR(name, sqlstate, http) \
    case ErrorCode::name:                \
        return sqlstate;
#include "sqlstates.def"
#undef ONCE_ERROR
    }
    return "XX000";
}

// The daemons' names for the SQLSTATEs they act on (sqlstate::key_held_by_prepared == "ON216").
namespace sqlstate {
#define ONCE_ERROR(name, code, http) inline constexpr const char name[] = code;
#include "sqlstates.def"
#undef ONCE_ERROR
}  // namespace sqlstate

class Error : public std::runtime_error {
public:
    Error(ErrorCode code, std::string message, std::string detail = {}, std::string hint = {})
        : std::runtime_error(std::move(message)), code_(code),
          detail_(std::move(detail)), hint_(std::move(hint)) {}

    ErrorCode code() const noexcept { return code_; }
    const std::string& detail() const noexcept { return detail_; }
    const std::string& hint() const noexcept { return hint_; }

private:
    ErrorCode code_;
    std::string detail_;
    std::string hint_;
};

}  // namespace once
