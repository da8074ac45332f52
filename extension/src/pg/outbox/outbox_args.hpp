// What the outbox's entry points share: message ids and positions, clocks, and the checks of
// their arguments (every bad argument is a once::Error with its own SQLSTATE, raised before
// anything is written). The entry points themselves are split by phase:
//   outbox_send.cpp    once.send / send_many (producers)
//   outbox_claim.cpp   once.claim / claim_locked (the scan, its watermark, the plans)
//   outbox_settle.cpp  once.ack / nack / dead / extend (leased and lock-held messages)
//   outbox_admin.cpp   small SQL helpers: positions, the topic policy, admin ids, released keys
//   outbox_wal_send.cpp, outbox_wal_write_back.cpp   the WAL transport's send and write-back
#pragma once

#include "core/error.hpp"
#include "core/uuid_v7.hpp"
#include "pg/common/convert.hpp"  // uuid and time conversions
#include "pg/common/guard.hpp"
#include "pg/common/settings.hpp"  // max_payload_bytes

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace once::pg {

constexpr int64 kMaxLeaseMs = int64(24) * 3600 * 1000;
constexpr int64 kMaxRetryAfterMs = int64(365) * 24 * 3600 * 1000;
constexpr int64 kMaxDeliverAheadMs = int64(3653) * 24 * 3600 * 1000;  // 10 years


std::array<uint8_t, 10> random10();
double uniform01();  // [0, 1), for backoff jitter
Uuid next_id();      // a fresh message id: UUID v7 of now, monotonic in this backend
std::vector<Uuid> next_ids(int n);  // n of them, from one draw of randomness


// Milliseconds of an interval as it is applied from now() (applied_interval_ms: calendar
// months, never 30-day ones); one that cannot be applied is an Error `code` naming it.
int64 interval_ms(const Interval* i, const char* name, ErrorCode code);
// Interval argument `arg` in milliseconds, NULL or outside [min_ms, max_ms] an error (ON209).
int64 interval_arg_ms(FunctionCallInfo fcinfo, int arg, const char* name, int64 min_ms, int64 max_ms);

text* topic_arg(FunctionCallInfo fcinfo, int arg);
text* relay_arg(FunctionCallInfo fcinfo, int arg);
// The topics argument of a claim: NULL (every topic) or a non-empty array of valid patterns.
ArrayType* topic_patterns_arg(FunctionCallInfo fcinfo, int arg);
// jsonb bytes of a (possibly toasted) datum, without detoasting it.
int64 jsonb_bytes(Datum raw);
// Checks a payload datum (possibly toasted) and returns it detoasted. `headers_bytes`: the
// message's headers, which count toward once.max_payload_bytes with the payload.
Jsonb* checked_payload(Datum raw, const std::string& what, int64 headers_bytes = 0);
// A message's headers argument, checked (ON204, ON214); `parsed` (if given) receives them as
// JSON, so that the caller need not parse them again.
Jsonb* headers_arg(FunctionCallInfo fcinfo, int arg, Json* parsed = nullptr);
// A message's content_type argument: NULL (application/json) or a media type
// (core/content_type.hpp); anything else is ON219.
text* content_type_arg(FunctionCallInfo fcinfo, int arg);

// A payload under a non-JSON content type must be a JSON string, whose value the sinks send
// (core/content_type.hpp): ON219 otherwise. `what` names the payload in the error.
void check_payload_for_content_type(text* content_type, Jsonb* payload, const std::string& what);

// The one rule for an array of message ids (ON211): not NULL, at most kMaxClaimBatch ids, none
// of them NULL, and not empty unless `allow_empty`. Returns its elements; `hint` goes with
// an error.
std::vector<Datum> message_ids(ArrayType* array, bool allow_empty, const char* hint);
// A relay's ids argument (ack, nack, extend): message_ids, empty allowed.
std::vector<Datum> ids_arg(FunctionCallInfo fcinfo, int arg);

}  // namespace once::pg
