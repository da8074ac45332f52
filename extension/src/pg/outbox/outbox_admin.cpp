// Small SQL helpers of the outbox's PL/pgSQL functions: claim positions (once.redrive), keys
// released by once.discard, and the default policy and checks of once.topic_policy.
#include "core/outbox_policy.hpp"
#include "pg/common/text_args.hpp"
#include "pg/outbox/outbox_args.hpp"
#include "pg/outbox/outbox_key_order.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/array.h"
#include "utils/timestamp.h"
}

using namespace once;
using namespace once::pg;

ONCE_SQL_FUNCTION(once_outbox_position) {
    TimestampTz at = PG_GETARG_TIMESTAMPTZ(0);
    if (TIMESTAMP_NOT_FINITE(at)) throw Error(ErrorCode::invalid_interval, "position time must be finite");
    pg_call([] { (void)GetCurrentTransactionId(); });  // the writer is visible to claims first
    return uuid_datum(uuid_v7_at(static_cast<uint64_t>(unix_ms(at)), random10()));
}

ONCE_SQL_FUNCTION(once_outbox_validate_policy) {
    text* topic = topic_arg(fcinfo, 0);
    (void)topic;
    RetryPolicy policy;
    if (PG_ARGISNULL(1)) throw Error(ErrorCode::invalid_policy, "max_attempts must not be NULL");
    policy.max_attempts = PG_GETARG_INT32(1);
    if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
        throw Error(ErrorCode::invalid_policy, "backoff_base and backoff_max must not be NULL");
    policy.backoff.base_ms = interval_ms(PG_GETARG_INTERVAL_P(2), "backoff_base", ErrorCode::invalid_policy);
    policy.backoff.cap_ms = interval_ms(PG_GETARG_INTERVAL_P(3), "backoff_max", ErrorCode::invalid_policy);
    validate_policy(policy);
    if (!PG_ARGISNULL(4) && interval_ms(PG_GETARG_INTERVAL_P(4), "retention", ErrorCode::invalid_policy) <= 0)
        throw Error(ErrorCode::invalid_policy, "retention must be positive or NULL",
                    {}, "Pass NULL to keep no delivered history.");
    PG_RETURN_VOID();
}

// once._outbox_keys_released(keys, owners): once.discard / once.cancel deleted messages of
// these keys sent by these roles (key_owner, element by element); the next messages are
// promoted when the transaction commits (outbox_key_order.hpp).
ONCE_SQL_FUNCTION(once_outbox_keys_released) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) PG_RETURN_VOID();
    Datum *keys = nullptr, *owners = nullptr;
    bool *key_nulls = nullptr, *owner_nulls = nullptr;
    int n = 0, n_owners = 0;
    pg_call([&] {
        deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, -1, false, TYPALIGN_INT, &keys, &key_nulls, &n);
        deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), OIDOID, sizeof(Oid), true, TYPALIGN_INT, &owners,
                          &owner_nulls, &n_owners);
    });
    if (n_owners != n) throw Error(ErrorCode::internal, "keys and owners differ in length");
    for (int i = 0; i < n; ++i)
        if (!key_nulls[i] && !owner_nulls[i])  // (from the key's start: the released key_seq is not known)
            outbox_key_released(text_view(DatumGetTextPP(keys[i])), DatumGetObjectId(owners[i]), Uuid{});
    PG_RETURN_VOID();
}

// once._outbox_default_policy(): the retry policy of topics without one of their own, from
// RetryPolicy (its one home); once.topic_policy fills the arguments left NULL from it.
ONCE_SQL_FUNCTION(once_outbox_default_policy) {
    const RetryPolicy policy;
    return pg_call([&] {
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "once._outbox_default_policy must return a record");
        auto interval_of = [](int64_t ms) {
            Interval* i = static_cast<Interval*>(palloc0(sizeof(Interval)));
            i->time = ms * 1000;
            return IntervalPGetDatum(i);
        };
        Datum values[] = {Int32GetDatum(policy.max_attempts), interval_of(policy.backoff.base_ms),
                          interval_of(policy.backoff.cap_ms)};
        bool nulls[] = {false, false, false};
        return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
    });
}

// once._check_dead_letter_ids(ids): the ids argument of the admin's functions (redrive,
// discard, expedite, cancel) by the rule of every ids argument, except that it may not be
// empty (a call with nothing to act on is a mistake there).
ONCE_SQL_FUNCTION(once_check_admin_ids) {
    message_ids(PG_ARGISNULL(0) ? nullptr : PG_GETARG_ARRAYTYPE_P(0), false,
                "Pass the ids of the messages, e.g. from once.dead_letters or once.blocked_keys.");
    PG_RETURN_VOID();
}
