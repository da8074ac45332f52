// Relays take messages: once.claim (leased) and once.claim_locked (held by the caller's
// transaction). Both pick the same messages the same way; they differ in what they write.
//
//  * once.claim marks each message as leased to the relay until now() + lease (a HOT update
//    of unindexed columns) and commits; the relay settles it later in its own transaction.
//    For slow sinks: no transaction stays open while the sink works.
//  * once.claim_locked deletes the messages in the caller's transaction and hands them out;
//    the caller settles them before COMMIT (outbox_locked.hpp). For fast sinks: one
//    transaction, one write per message, like a hand-written DELETE ... SKIP LOCKED queue.
//
// Which messages. Due (visible_at <= now), oldest claim position first, and only the oldest
// unfinished message of a key: a keyed message is taken only when no message of its key and
// owner (the role that sent it: outbox_key_order.hpp) with a smaller key_seq is left in the
// outbox (in flight, waiting for a retry, or dead), nor one of its key sent before 0.3 (owner
// 0, sender unknown), so one message per key and role is out at a time. A message's claim position is its id (time-ordered v7)
// unless it was delayed, retried, redriven or numbered by its producer: then pos. Messages
// behind their key's head have the waiting position (outbox_key_order.hpp), after every range
// read here; the check of earlier key_seqs stays for messages written by 0.1. Never taken:
// a row the WAL transport's relay fenced (stream_fence), and the keys of lock buckets a
// prepared transaction holds (outbox_key_order.hpp).
//
// Where the scan walks. Without a topic filter: the primary key (messages claimed in id
// order) and the partial pos index (the few others), each from a per-backend low watermark.
// With topics: the index on (topic, claim position), one ordered scan per wanted topic, so a
// relay for one topic never walks another topic's backlog. Wanted topics are the
// literal ones named, or for wildcard patterns the outbox's distinct topics (a skip scan of
// the same index: one descent per topic) that match.
//
// The low watermark: the claim position of the oldest live row, capped by the start of the
// oldest transaction in this database that holds an xid (it may still commit rows with older
// positions). Index entries of acked rows below it are never visited again, so an old
// snapshot that stops VACUUM from removing them does not slow claims down. It moves forward
// at most every 100 ms and is recomputed from scratch every 10 s (which also picks up
// prepared transactions).
#include "core/outbox_policy.hpp"
#include "core/topic.hpp"
#include "pg/common/spi.hpp"
#include "pg/common/text_args.hpp"
#include "pg/outbox/outbox_args.hpp"
#include "pg/outbox/outbox_key_order.hpp"
#include "pg/outbox/outbox_locked.hpp"
#include "pg/outbox/outbox_sql.hpp"

extern "C" {
#include "utils/array.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
}

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace once::pg {
namespace {

struct Watermark {
    bool valid = false;
    Uuid low{};
    TimestampTz refreshed = 0;
    TimestampTz full_refresh = 0;
};
Watermark watermark;

constexpr int64 kWatermarkStepUs = 100 * 1000;         // move forward at most every 100 ms
constexpr int64 kWatermarkFullUs = 10 * 1000 * 1000;  // recompute from scratch every 10 s

// The smallest claim position >= $1 of any message: per topic, the first entry of the topic
// index at or after $1 (a skip scan from topic to topic: one descent each). Dead letters
// (position nil) and delayed messages (positions ahead) cost nothing; index entries below $1
// are passed over inside the index, without visiting the table.
SavedPlan first_live_plan(R"(
WITH RECURSIVE present(topic) AS (
    SELECT (SELECT o.topic FROM once.outbox o
             WHERE COALESCE(o.pos, o.id) OPERATOR(pg_catalog.>=) $1 ORDER BY o.topic LIMIT 1)
  UNION ALL
    SELECT (SELECT o.topic FROM once.outbox o
             WHERE o.topic OPERATOR(pg_catalog.>) p.topic AND COALESCE(o.pos, o.id) OPERATOR(pg_catalog.>=) $1
             ORDER BY o.topic LIMIT 1)
      FROM present p WHERE p.topic IS NOT NULL)
SELECT f.first FROM present p CROSS JOIN LATERAL (
    SELECT COALESCE(o.pos, o.id) AS first FROM once.outbox o
     WHERE o.topic OPERATOR(pg_catalog.=) p.topic AND COALESCE(o.pos, o.id) OPERATOR(pg_catalog.>=) $1
     ORDER BY COALESCE(o.pos, o.id) LIMIT 1) f
 ORDER BY f.first LIMIT 1)",
                          {UUIDOID});

// Start of the oldest transaction of this database that holds an xid (it may commit rows
// whose positions lie in the past), or `now`.
TimestampTz oldest_writer_start(TimestampTz now) {
    return pg_call([&] {
        TimestampTz oldest = now;
        pgstat_clear_backend_activity_snapshot();
        int n = pgstat_fetch_stat_numbackends();
        for (int i = 1; i <= n; ++i) {
            LocalPgBackendStatus* e = compat::local_backend_status(i);
            if (e == nullptr || !TransactionIdIsValid(e->backend_xid)) continue;
            if (e->backendStatus.st_databaseid != MyDatabaseId) continue;
            TimestampTz start = e->backendStatus.st_xact_start_timestamp;
            if (start != 0 && start < oldest) oldest = start;
        }
        pgstat_clear_backend_activity_snapshot();
        return oldest;
    });
}

// A queue table's statistics are often stale (empty at the last ANALYZE, 100k rows now). The
// claim and watermark queries must walk their index in order and stop at LIMIT whatever the
// estimates say, so they run with bitmap scans, sequential scans and explicit sorts disabled,
// and without JIT (restored after).
class IndexOrderPlans {
public:
    IndexOrderPlans() {
        nest_level_ = pg_call([] {
            int level = NewGUCNestLevel();
            set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                              true, 0, false);
            set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                              false);
            set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true,
                              0, false);
            // the disabled paths' costs would otherwise trigger JIT compilation (~0.5 s)
            set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
            return level;
        });
    }
    // Called on success; after an error, (sub)transaction abort restores the settings.
    void restore() {
        int level = nest_level_;
        pg_call([&] { AtEOXact_GUC(true, level); });
    }

private:
    int nest_level_;
};

// The watermark `w` of the rows `first_from` covers, refreshed when due. first_from(from):
// the smallest claim position >= from among them, if any.
template <typename FirstFrom>
Uuid refreshed_low(Watermark& w, FirstFrom first_from) {
    if (IsolationUsesXactSnapshot()) return Uuid{};  // old snapshot: rows committed since are unseen
    TimestampTz now = GetCurrentTimestamp();
    const bool full = !w.valid || now - w.full_refresh >= kWatermarkFullUs;
    if (!full && now - w.refreshed < kWatermarkStepUs) return w.low;

    // Read the clock and the writers before the table (whose snapshot is taken after): a row
    // missing from that snapshot belongs to a writer seen here or is positioned after `now`.
    TimestampTz oldest = oldest_writer_start(now);
    Uuid cap = uuid_v7_floor(static_cast<uint64_t>(unix_ms(oldest) - 1));
    Uuid from{};
    from[15] = 1;  // just above nil: dead letters (pos = nil) are never scanned
    if (!full) from = w.low;
    Uuid low = cap;
    std::optional<Uuid> first;
    {
        IndexOrderPlans hints;
        {
            AsExtensionOwner owner;
            first = first_from(from);
        }
        hints.restore();
    }
    if (first && *first < low) low = *first;
    if (!full && low < w.low) low = w.low;  // never move back between full refreshes
    w.low = low;
    w.valid = true;
    w.refreshed = now;
    if (full) w.full_refresh = now;
    return low;
}

std::optional<Uuid> first_position(uint64 rows) {
    Datum v;
    if (rows == 1 && spi_value(0, 1, &v)) return to_uuid(v);
    return std::nullopt;
}

// The lowest position a claim of every topic must look at. Uuid{} (nil): from the start.
Uuid claim_low_watermark() {
    return refreshed_low(watermark, [](const Uuid& from) {
        Datum values[] = {uuid_datum(from)};
        return first_position(first_live_plan.execute(values, nullptr, 1));
    });
}

// Per topic (for claims that name their topics): where one topic's live messages begin. The
// watermark of every topic sits at the oldest message of any topic, so beside another
// topic's backlog it would leave this topic's acknowledged prefix (dead index entries until
// VACUUM) to be walked by every claim.
SavedPlan first_of_topic_plan(R"(
SELECT COALESCE(o.pos, o.id) FROM once.outbox o
 WHERE o.topic OPERATOR(pg_catalog.=) $1 AND COALESCE(o.pos, o.id) OPERATOR(pg_catalog.>=) $2
 ORDER BY COALESCE(o.pos, o.id) LIMIT 1)",
                              {TEXTOID, UUIDOID});

std::map<std::string, Watermark, std::less<>> topic_watermarks;
constexpr size_t kMaxTopicWatermarks = 1000;  // forget them all past this (topics come and go)

Uuid topic_low_watermark(std::string_view topic, Datum topic_text) {
    auto it = topic_watermarks.find(topic);
    if (it == topic_watermarks.end()) {
        if (topic_watermarks.size() >= kMaxTopicWatermarks) topic_watermarks.clear();
        it = topic_watermarks.emplace(std::string(topic), Watermark{}).first;
    }
    return refreshed_low(it->second, [&](const Uuid& from) {
        Datum values[] = {topic_text, uuid_datum(from)};
        return first_position(first_of_topic_plan.execute(values, nullptr, 1));
    });
}

// ----------------------------------------------------------------------------- the claim SQL
//
// Parameters of every claim statement:
//   $1 low watermark, $2 high position (end of this millisecond: later ones are delayed),
//   $3 batch, $4 relay, $5 topic patterns (NULL: every topic), $6 lease (claim only),
//   $7 keys this transaction holds unsettled (claim_locked: what follows them must wait),
//   $8 the topics to scan when every pattern is literal (NULL: enumerate and match $5), and
//   $9 their own low watermarks (enumerated topics start at $1), and $10 the key lock buckets
//   prepared transactions hold (NULL: none; outbox_key_order.hpp): their keys are skipped.
// Each scan is ORDER BY + LIMIT + FOR UPDATE SKIP LOCKED on one index, run with the plan
// shapes IndexOrderPlans forces. Rows a scan locked beyond the batch stay locked, untouched,
// until the transaction ends.

// Due, and the oldest unfinished message of its key (alias o).
// (A fenced write-back of the WAL transport is not claimable until its relay releases it:
// outbox_wal_write_back.cpp. Rows behind it in its key wait by the key_seq check.)
const std::string kClaimable = R"(
       AND o.visible_at OPERATOR(pg_catalog.<=) pg_catalog.now()
       AND o.stream_fence IS NULL
       AND (o.key IS NULL
            OR (NOT o.key OPERATOR(pg_catalog.=) ANY ($7::pg_catalog.text[])
                AND NOT EXISTS (SELECT 1 FROM once.outbox e
                                 WHERE e.key OPERATOR(pg_catalog.=) o.key AND e.key IS NOT NULL
                                   AND e.key_seq OPERATOR(pg_catalog.<) o.key_seq
                                   AND (e.key_owner OPERATOR(pg_catalog.=) o.key_owner
                                        OR e.key_owner OPERATOR(pg_catalog.=) 0))
                AND ($10::pg_catalog.int4[] IS NULL
                     OR NOT once._outbox_key_bucket(o.key) OPERATOR(pg_catalog.=) ANY ($10::pg_catalog.int4[])))))";

// Its attempts are used up (a lease expired on the last one): it becomes a dead letter.
// (Never on attempt 0, almost every message: no policy lookup for those.)
const std::string kExhausted = R"(
       CASE WHEN o.attempt OPERATOR(pg_catalog.=) 0 THEN false
            ELSE o.attempt OPERATOR(pg_catalog.>=)
                   COALESCE((SELECT p.max_attempts FROM once.outbox_topic_policies p
                              WHERE p.topic OPERATOR(pg_catalog.=) o.topic), )" +
                              std::to_string(RetryPolicy{}.max_attempts) + R"() END AS exhausted)";

// Candidates c(tid, sort, exhausted) of every topic: the pos index and the primary key.
const std::string kEveryTopic = R"(
WITH moved AS (
  SELECT o.ctid AS tid, o.pos AS sort,)" + kExhausted + R"(
    FROM once.outbox o
   WHERE o.pos IS NOT NULL
     AND o.pos OPERATOR(pg_catalog.>=) $1 AND o.pos OPERATOR(pg_catalog.<) $2)" + kClaimable + R"(
   ORDER BY o.pos LIMIT $3
   FOR UPDATE OF o SKIP LOCKED),
 plain AS (
  SELECT o.ctid AS tid, o.id AS sort,)" + kExhausted + R"(
    FROM once.outbox o
   WHERE o.pos IS NULL
     AND o.id OPERATOR(pg_catalog.>=) $1 AND o.id OPERATOR(pg_catalog.<) $2)" + kClaimable + R"(
   ORDER BY o.id LIMIT $3
   FOR UPDATE OF o SKIP LOCKED),
 c AS (SELECT * FROM (SELECT * FROM moved UNION ALL SELECT * FROM plain) m ORDER BY m.sort LIMIT $3),)";

// Candidates c of the wanted topics: one scan of outbox_topic per topic.
const std::string kSomeTopics = R"(
WITH RECURSIVE present(topic) AS (
    SELECT (SELECT o.topic FROM once.outbox o
             WHERE $8::pg_catalog.text[] IS NULL AND COALESCE(o.pos, o.id) OPERATOR(pg_catalog.>=) $1
             ORDER BY o.topic LIMIT 1)
  UNION ALL
    SELECT (SELECT o.topic FROM once.outbox o
             WHERE o.topic OPERATOR(pg_catalog.>) p.topic AND COALESCE(o.pos, o.id) OPERATOR(pg_catalog.>=) $1
             ORDER BY o.topic LIMIT 1)
      FROM present p WHERE p.topic IS NOT NULL),
 wanted AS (
    SELECT p.topic, $1 AS low FROM present p
     WHERE p.topic IS NOT NULL AND once._outbox_topics_match($5, p.topic)
  UNION ALL
    SELECT t.topic, t.low
      FROM ROWS FROM (pg_catalog.unnest($8::pg_catalog.text[]), pg_catalog.unnest($9::pg_catalog.uuid[])) AS t(topic, low)),
 c AS (
  SELECT x.* FROM wanted w CROSS JOIN LATERAL (
    SELECT o.ctid AS tid, COALESCE(o.pos, o.id) AS sort,)" + kExhausted + R"(
      FROM once.outbox o
     WHERE o.topic OPERATOR(pg_catalog.=) w.topic
       AND COALESCE(o.pos, o.id) OPERATOR(pg_catalog.>=) w.low
       AND COALESCE(o.pos, o.id) OPERATOR(pg_catalog.<) $2)" + kClaimable + R"(
     ORDER BY COALESCE(o.pos, o.id) LIMIT $3
     FOR UPDATE OF o SKIP LOCKED) x
  ORDER BY x.sort LIMIT $3),)";

// The exhausted candidates become dead letters. (Rows are found again by ctid = ANY(array):
// one TID scan, where a join on ctid rescans a TID scan per row, each asking the kernel for
// the table's size.)
const std::string kDeadTail = R"(
 dead AS (
  UPDATE once.outbox o
     SET )" + outbox_sql::dead_letter_assignments(R"(
           COALESCE(o.last_error OPERATOR(pg_catalog.||) '; ', '')
           OPERATOR(pg_catalog.||) 'lease of attempt ' OPERATOR(pg_catalog.||)
           o.attempt::pg_catalog.text OPERATOR(pg_catalog.||) ' expired (last relay '
           OPERATOR(pg_catalog.||) COALESCE(o.relay, '?') OPERATOR(pg_catalog.||) ')')") + R"(
   WHERE o.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT c.tid FROM c WHERE c.exhausted))
  RETURNING 1),)";

// once.claim: lease the others to the relay.
const std::string kLeaseTail = kDeadTail + R"(
 u AS (
  UPDATE once.outbox o
     SET attempt = o.attempt OPERATOR(pg_catalog.+) 1, relay = $4,
         visible_at = pg_catalog.now() OPERATOR(pg_catalog.+) $6
   WHERE o.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT c.tid FROM c WHERE NOT c.exhausted))
  RETURNING o.id, o.topic, o.key, o.payload, o.headers, o.attempt, o.created_at, o.content_type,
            COALESCE(o.pos, o.id) AS sort)
SELECT u.id, u.topic, u.key, u.payload, u.headers, u.attempt, u.created_at, u.content_type
  FROM u ORDER BY u.sort)";

// once.claim_locked: delete the others in this transaction (and write the delivered history
// of topics that keep one now: a give-back removes it again).
const std::string kDeleteTail = kDeadTail + R"(
 d AS (
  DELETE FROM once.outbox o
   WHERE o.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT c.tid FROM c WHERE NOT c.exhausted))
  RETURNING o.id, o.topic, o.key, o.payload, o.headers,
            o.attempt OPERATOR(pg_catalog.+) 1 AS attempt, o.created_at, o.key_seq, o.key_owner,
            o.content_type, COALESCE(o.pos, o.id) AS sort),)" + outbox_sql::delivered_history_cte("$4") + R"(
SELECT d.id, d.topic, d.key, d.payload, d.headers, d.attempt, d.created_at, d.key_seq, d.key_owner, d.content_type
  FROM d ORDER BY d.sort)";

const std::initializer_list<Oid> kClaimTypes = {UUIDOID,      UUIDOID,     INT4OID,      TEXTOID,     TEXTARRAYOID,
                                                INTERVALOID, TEXTARRAYOID, TEXTARRAYOID, UUIDARRAYOID,
                                                INT4ARRAYOID};
const std::string kLeaseEvery = kEveryTopic + kLeaseTail;
const std::string kLeaseSome = kSomeTopics + kLeaseTail;
const std::string kDeleteEvery = kEveryTopic + kDeleteTail;
const std::string kDeleteSome = kSomeTopics + kDeleteTail;
SavedPlan lease_every_plan(kLeaseEvery.c_str(), kClaimTypes);
SavedPlan lease_some_plan(kLeaseSome.c_str(), kClaimTypes);
SavedPlan delete_every_plan(kDeleteEvery.c_str(), kClaimTypes);
SavedPlan delete_some_plan(kDeleteSome.c_str(), kClaimTypes);

enum class ClaimMode { leased, locked };

// The literal topics of `patterns` (deduplicated) when none has a wildcard, else nullopt.
std::optional<std::vector<std::string>> literal_topics(ArrayType* patterns) {
    Datum* elems = nullptr;
    bool* nulls = nullptr;
    int n = 0;
    pg_call([&] { deconstruct_array(patterns, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n); });
    std::vector<std::string> topics;
    for (int i = 0; i < n; ++i) {
        std::string_view t = text_view(DatumGetTextPP(elems[i]));
        if (!is_literal_pattern(t)) return std::nullopt;
        topics.emplace_back(t);
    }
    std::sort(topics.begin(), topics.end());
    topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
    return topics;
}

// Runs the claim; its rows are in SPI_tuptable. `lease` is 0 for claim_locked.
uint64 run_claim(ClaimMode mode, text* relay, int32 batch, ArrayType* patterns, Datum lease) {
    std::optional<std::vector<std::string>> literal;
    if (patterns) literal = literal_topics(patterns);
    // (named topics start at their own watermarks: no need for the one of every topic)
    Uuid low = literal ? Uuid{} : claim_low_watermark();
    Uuid high = uuid_v7_floor(static_cast<uint64_t>(unix_ms(GetCurrentTimestamp()) + 1));
    ArrayType* literal_names = nullptr;
    ArrayType* literal_lows = nullptr;
    if (literal) {
        literal_names = text_array(*literal);
        std::vector<Datum> lows;
        for (const std::string& t : *literal) lows.push_back(uuid_datum(topic_low_watermark(t, text_datum(t))));
        literal_lows = pg_call([&] {
            return construct_array(lows.data(), static_cast<int>(lows.size()), UUIDOID, UUID_LEN, false, TYPALIGN_CHAR);
        });
    }
    ArrayType* held = text_array(outbox_locked_keys());
    ArrayType* prepared = prepared_key_buckets();
    Datum values[] = {uuid_datum(low),        uuid_datum(high),          Int32GetDatum(batch),
                      PointerGetDatum(relay), PointerGetDatum(patterns), lease,
                      PointerGetDatum(held),  PointerGetDatum(literal_names), PointerGetDatum(literal_lows),
                      PointerGetDatum(prepared)};
    const char nulls[] = {' ', ' ', ' ', ' ', patterns ? ' ' : 'n', lease ? ' ' : 'n', ' ',
                          literal ? ' ' : 'n', literal ? ' ' : 'n', prepared ? ' ' : 'n'};
    SavedPlan& plan = mode == ClaimMode::leased ? (patterns ? lease_some_plan : lease_every_plan)
                                                : (patterns ? delete_some_plan : delete_every_plan);
    uint64 n;
    IndexOrderPlans hints;
    {
        AsExtensionOwner owner;
        n = plan.execute(values, nulls);
    }
    hints.restore();
    return n;
}

int32 batch_arg(FunctionCallInfo fcinfo, int arg) {
    if (PG_ARGISNULL(arg))
        throw Error(ErrorCode::invalid_batch, "batch must not be NULL", {}, "Pass e.g. 100.");
    int32 batch = PG_GETARG_INT32(arg);
    validate_batch(batch);
    return batch;
}

}  // namespace
}  // namespace once::pg

using namespace once;
using namespace once::pg;

ONCE_SQL_FUNCTION(once_claim) {
    text* relay = relay_arg(fcinfo, 0);
    int32 batch = batch_arg(fcinfo, 1);
    interval_arg_ms(fcinfo, 2, "lease", 1, kMaxLeaseMs);
    ArrayType* patterns = topic_patterns_arg(fcinfo, 3);

    pg_call([&] { InitMaterializedSRF(fcinfo, 0); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    SpiSession spi;
    uint64 n = run_claim(ClaimMode::leased, relay, batch, patterns, PG_GETARG_DATUM(2));
    pg_call([&] {
        for (uint64 i = 0; i < n; ++i)
            tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
    });
    return (Datum)0;
}

ONCE_SQL_FUNCTION(once_claim_locked) {
    text* relay = relay_arg(fcinfo, 0);
    int32 batch = batch_arg(fcinfo, 1);
    ArrayType* patterns = topic_patterns_arg(fcinfo, 2);

    pg_call([&] { InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    SpiSession spi;
    uint64 n = run_claim(ClaimMode::locked, relay, batch, patterns, 0);
    for (uint64 i = 0; i < n; ++i) {
        Datum v[10];
        bool isnull[10];
        pg_call([&] { heap_deform_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, v, isnull); });
        LockedMessage m{to_uuid(v[0]),        v[1],
                        isnull[2] ? 0 : v[2], isnull[7] ? 0 : v[7],
                        isnull[8] ? InvalidOid : DatumGetObjectId(v[8]),
                        v[3],                 isnull[4] ? 0 : v[4],
                        DatumGetInt32(v[5]),  DatumGetTimestampTz(v[6]),
                        isnull[9] ? 0 : v[9]};
        const LockedMessage& kept = outbox_locked_claimed(m);
        // The result carries the kept (detoasted) values: the row's TOAST chunks are deleted.
        Datum out[] = {v[0], kept.topic, kept.key, kept.payload, kept.headers, v[5], v[6], kept.content_type};
        bool out_null[] = {false, false, isnull[2], false, isnull[4], false, false, isnull[9]};
        pg_call([&] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, out_null); });
    }
    return (Datum)0;
}

ONCE_SQL_FUNCTION(once_outbox_topics_match) {
    ArrayType* patterns = PG_GETARG_ARRAYTYPE_P(0);
    text* topic = PG_GETARG_TEXT_PP(1);
    Datum* elems = nullptr;
    bool* nulls = nullptr;
    int n = 0;
    pg_call([&] { deconstruct_array(patterns, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n); });
    for (int i = 0; i < n; ++i)
        if (!nulls[i] && topic_matches(text_view(DatumGetTextPP(elems[i])), text_view(topic))) PG_RETURN_BOOL(true);
    PG_RETURN_BOOL(false);
}
