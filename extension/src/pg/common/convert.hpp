// Conversions between PostgreSQL Datums and C++ values: text, uuid, arrays, jsonb and time.
// Every file of src/pg converts through these, so that a change of the server's API is one
// edit here. Each function that may ereport calls PostgreSQL through pg_call (guard.hpp), so
// it is safe with C++ objects alive on the stack.
#pragma once

#include "core/json.hpp"
#include "core/uuid_v7.hpp"
#include "pg/common/guard.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace once::pg {

// ---- text
// The bytes of a text value (detoasted; short or long varlena header).
std::string_view text_view(const text* t);
// A new text Datum holding s, in the current memory context.
Datum text_datum(std::string_view s);

// ---- uuid
// A new uuid Datum, allocated in `context` (a caller's context outlives SPI_finish).
Datum uuid_datum(const Uuid& id, MemoryContext context = CurrentMemoryContext);
Uuid to_uuid(Datum d);
std::string uuid_text(Datum d);  // canonical lower-case form with hyphens

// ---- arrays (one-dimensional, lower bound 1)
ArrayType* text_array(const std::vector<std::string>& items);
ArrayType* bool_array(const std::vector<bool>& items);
ArrayType* oid_array(const std::vector<Oid>& items);
// uuid[]: NULL elements where an id is absent.
ArrayType* uuid_array(const std::vector<std::optional<Uuid>>& ids);
// uuid[] of uuid Datums already built.
ArrayType* uuid_array(const std::vector<Datum>& ids);

// ---- jsonb
std::string jsonb_text(Datum jsonb);  // the jsonb's text form, as jsonb_out prints it
Datum jsonb_datum(std::string_view json_text);  // parsed by jsonb_in (its errors are PostgreSQL's)
Datum jsonb_datum(const Json& value);

// ---- time
// Milliseconds since 1970-01-01 UTC, floored (a deadline of "now" is due now, also before
// 1970); the clock of v7 uuids and of saga deadlines.
int64_t unix_ms(TimestampTz ts);
TimestampTz timestamp_from_unix_ms(int64_t ms);
// Milliseconds from the transaction's now() to now() + interval, computed as the SQL applies
// it (calendar months and days in the session's time zone: '1 mon' is 28 to 31 days), floored;
// nullopt when now() + interval is outside the timestamp range or infinite. pg_once checks
// this value, never a 30-day-month approximation, so that a bound holds for what is applied.
std::optional<int64_t> applied_interval_ms(const Interval* interval);

}  // namespace once::pg
