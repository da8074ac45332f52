// Per-key order decided at commit; the mechanism and why: outbox_key_order.hpp, docs/outbox.md.
#include "pg/outbox/outbox_key_order.hpp"

#include "core/error.hpp"
#include "core/key_groups.hpp"
#include "core/message_route.hpp"
#include "core/outbox_policy.hpp"
#include "pg/common/convert.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/locks.hpp"
#include "pg/common/spi.hpp"
#include "pg/common/text_args.hpp"
#include "pg/outbox/key_seq_memory.hpp"
#include "pg/outbox/outbox_notify.hpp"
#include "pg/outbox/outbox_wal_send.hpp"
#include "pg/outbox/wal_message_tag.hpp"

extern "C" {
#include "access/twophase.h"
#include "funcapi.h"
}

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace once::pg {
namespace {

// One keyed message sent by the current transaction.
struct Sent {
    uint32 hash;          // lock of the key: hash_bytes(key)
    std::string key;
    Oid owner;            // the sending role: a key orders a role's own messages (key_owner)
    Uuid id;
    Uuid seq;             // provisional key_seq (send order)
    bool waiting;         // inserted with the waiting position
    std::optional<Uuid> head_position;  // its position as the key's head (nullopt: its id)
    int nest_level;       // subtransaction that inserted it (dropped when that one aborts)
};

// In send order. Cleared at the end of every transaction.
std::vector<Sent> sent_in_xact;

// A keyed message of the WAL transport, held until pre-commit chooses its home (stream or
// table). message.key_seq is its provisional key_seq, message.key_owner the sending role.
struct Deferred {
    uint32 hash;
    WalMessage message;
    RouteFacts routed;    // the facts that routed it at send (Route::wal_at_commit)
    int nest_level;
};
std::vector<Deferred> deferred_in_xact;  // in send order
// A message this transaction removed that may have been its key's head: its key, and its
// key_seq (the next message is the first after it; nil: look from the key's start).
struct Released {
    std::string key;
    Oid owner;            // key_owner of the released message
    Uuid seq;
    bool operator<(const Released& o) const { return std::tie(key, owner, seq) < std::tie(o.key, o.owner, o.seq); }
    bool operator==(const Released& o) const { return key == o.key && owner == o.owner && seq == o.seq; }
};
std::vector<Released> released_in_xact;  // (duplicates allowed)
std::optional<Oid> key_owner_override;   // set by a KeyOwnerScope

uint32 key_hash(std::string_view key) {
    return hash_bytes(reinterpret_cast<const unsigned char*>(key.data()), static_cast<int>(key.size()));
}

// Keys are locked by bucket, not one by one: one lock per key would let a transaction that
// sends or acknowledges 50,000 keys fill the server's shared lock table ("out of shared
// memory") and make other sessions of the cluster fail. With buckets a transaction
// holds at most kKeyLockBuckets of them; two keys that share a bucket only share a short wait
// at commit. Order holds as before: every commit of a key takes its bucket.
constexpr uint32 kKeyLockBuckets = 256;
static_assert(kKeyLockBuckets == kKeySeqMemoryBuckets, "one greatest key_seq per lock bucket");
uint32 key_bucket(uint32 hash) { return hash % kKeyLockBuckets; }

// The one place an outbox key lock is taken (transaction-scoped, released after the commit
// is visible; a lock tag SQL cannot reach: pg/common/locks.hpp).
void lock_key_bucket(uint32 bucket) { lock_transaction(LockClass::outbox_key, bucket); }

SavedPlan last_key_seq_plan(
    "SELECT o.key_seq FROM once.outbox o"
    " WHERE o.key OPERATOR(pg_catalog.=) $1 AND o.key IS NOT NULL AND o.key_owner OPERATOR(pg_catalog.=) $2"
    " ORDER BY o.key_seq DESC LIMIT 1",
    {TEXTOID, OIDOID});

// $1 ids, $2 their final key_seqs, $3 whether their position changes, $4 the new position.
SavedPlan restamp_plan(R"(
UPDATE once.outbox o
   SET key_seq = u.seq, pos = CASE WHEN u.move THEN u.pos ELSE o.pos END
  FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.uuid[]), pg_catalog.unnest($2::pg_catalog.uuid[]),
                  pg_catalog.unnest($3::pg_catalog.bool[]), pg_catalog.unnest($4::pg_catalog.uuid[]))
       AS u(id, seq, move, pos)
 WHERE o.id OPERATOR(pg_catalog.=) u.id)",
                         {UUIDARRAYOID, UUIDARRAYOID, BOOLARRAYOID, UUIDARRAYOID});

// Promotion: for each released message ($1 its key, $2 its key_seq, $3 its key_owner), the next
// message of that key and owner,
// if it waits, gets its claim position: now, or its deliver_at when that is still ahead. The
// scan starts after the released key_seq, so the index entries of the key's acknowledged
// messages that VACUUM has not removed yet are not walked again. (Were the released message
// not the head -- messages written by 0.1 -- a promoted message could stand behind another
// that does not wait: the claim's key_seq check still holds it back.)
// Returns how many of those next messages are due now, waiting or not: each became claimable
// with this commit (one that did not wait was held back by the claim's key_seq check). "Now"
// is the clock, not now(): a relay's transaction starts before the next message is sent
// (a reply sent while the relay held the command), and that message's visible_at is its
// sender's now(), later than this transaction's.
SavedPlan promote_plan(R"(
WITH next AS (
  SELECT (SELECT f.ctid FROM once.outbox f
           WHERE f.key OPERATOR(pg_catalog.=) r.key AND f.key IS NOT NULL
             AND f.key_owner OPERATOR(pg_catalog.=) r.owner
             AND f.key_seq OPERATOR(pg_catalog.>) r.seq
           ORDER BY f.key_seq LIMIT 1) AS tid
    FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.uuid[]),
                    pg_catalog.unnest($3::pg_catalog.oid[]))
         AS r(key, seq, owner)),
promoted AS (
  UPDATE once.outbox o
     SET pos = once._outbox_position(GREATEST(o.visible_at, pg_catalog.clock_timestamp()))
   WHERE o.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT n.tid FROM next n))
     AND o.pos OPERATOR(pg_catalog.=) )" ONCE_SQL_WAITING_POSITION R"()
SELECT pg_catalog.count(*)::pg_catalog.int4 FROM once.outbox o
 WHERE o.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT n.tid FROM next n))
   AND o.visible_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp())",
                         {TEXTARRAYOID, UUIDARRAYOID, OIDARRAYOID});

// The greatest key_seq of `key` sent by `owner` and committed by other transactions, as of now:
// a fresh snapshot (also under REPEATABLE READ) whose command id hides this transaction's own
// inserts.
std::optional<Uuid> last_committed_key_seq(const std::string& key, Oid owner, Snapshot others) {
    Datum values[] = {pg_call([&] {
        return PointerGetDatum(cstring_to_text_with_len(key.data(), static_cast<int>(key.size())));
    }), ObjectIdGetDatum(owner)};
    uint64 n;
    {
        AsExtensionOwner owner;
        n = last_key_seq_plan.execute(others, true, values, nullptr, 1);
    }
    Datum v;
    if (n != 1 || !spi_value(0, 1, &v)) return std::nullopt;
    Uuid seq;
    std::memcpy(seq.data(), DatumGetUUIDP(v)->data, UUID_LEN);
    return seq;
}

// The key of `released` in `bucket`, for an error message.
std::string key_in_bucket(const std::vector<Released>& released, uint32 bucket) {
    for (const Released& r : released)
        if (key_bucket(key_hash(r.key)) == bucket) return r.key;
    return {};
}

SavedPlan prepared_gid_plan(
    "SELECT p.gid FROM pg_catalog.pg_prepared_xacts p WHERE p.transaction OPERATOR(pg_catalog.=) $1",
    {XIDOID});

[[noreturn]] void held_by_prepared_error(const std::string& key, TransactionId xid) {
    std::string gid = "?";
    {
        SpiSession spi;
        Datum values[] = {TransactionIdGetDatum(xid)};
        Datum g;
        // (at pre-commit there is no outer snapshot: the statement brings its own)
        Snapshot now = pg_call([] { return RegisterSnapshot(GetLatestSnapshot()); });
        if (prepared_gid_plan.execute(now, true, values, nullptr, 1) == 1 && spi_value(0, 1, &g))
            gid = std::string(text_view(DatumGetTextPP(g)));
        pg_call([&] { UnregisterSnapshot(now); });
    }
    throw Error(ErrorCode::key_held_by_prepared,
                "key \"" + key + "\" is held by prepared transaction \"" + gid + "\"",
                "The prepared transaction (xid " + std::to_string(xid) +
                    ") keeps the order lock of this key, or of a key that shares its lock bucket, until "
                    "COMMIT PREPARED or ROLLBACK PREPARED: settling this message would wait until then.",
                "End it with COMMIT PREPARED '" + gid + "' or ROLLBACK PREPARED '" + gid +
                    "'. once.blocked_keys lists the keys it holds; claims skip them meanwhile.");
}

// Locks the buckets of a transaction that only releases keys: as lock_key_bucket, in the same
// order, except that a bucket a prepared transaction holds is an error, not a wait.
void lock_released_buckets(const std::vector<uint32>& buckets, const std::vector<Released>& released) {
    std::optional<std::vector<std::pair<uint32, TransactionId>>> prepared;  // read once, if needed
    for (uint32 b : buckets) {
        if (try_lock_transaction(LockClass::outbox_key, b)) continue;
        if (!prepared) prepared = held_by_prepared(LockClass::outbox_key);
        for (const auto& [bucket, xid] : *prepared)
            if (bucket == b) held_by_prepared_error(key_in_bucket(released, b), xid);
        lock_key_bucket(b);   // a running transaction's commit: wait for it, as every commit does
    }
}

// The greatest of two optional key_seqs.
std::optional<Uuid> later_of(const std::optional<Uuid>& a, const std::optional<Uuid>& b) {
    if (!a) return b;
    if (!b) return a;
    return std::max(*a, *b);
}

// The deferred keyed WAL messages of one key and owner (in send order), after the bucket's lock:
// routed again (route_message) now that the step knows whether the table holds a message of
// the key (another transaction's, or this one's: `in_table`) and whether the transaction is
// being prepared; "a key has one home at a time" (docs/design.md). On the stream they get
// key_seqs after the bucket's greatest issued one and are emitted now; otherwise they are
// inserted as rows and appended to `sent`, so the table's step below orders them like any send.
void settle_deferred(std::vector<Deferred>::iterator begin, std::vector<Deferred>::iterator end, bool in_table,
                     bool preparing, Snapshot others, std::vector<Sent>& sent) {
    const WalMessage& first = begin->message;
    const uint32 bucket = key_bucket(begin->hash);
    // (A message of the key sent before 0.3, owner 0, goes before the role's messages too:
    // outbox_claim.cpp. The second probe finds nothing once those are delivered.)
    const bool others_in_table = last_committed_key_seq(*first.key, first.key_owner, others).has_value() ||
                                 last_committed_key_seq(*first.key, 0, others).has_value();
    RouteFacts facts = begin->routed;   // (one key and owner: the same facts for the group)
    facts.at_commit = CommitFacts{in_table || others_in_table, preparing};
    if (route_message(facts) == Route::table_row) {
        // Behind another transaction's message of the key they wait (a promotion moves them
        // on); the step below makes sure a waiting message has one to wait for.
        for (auto it = begin; it != end; ++it) {
            insert_deferred_as_row(it->message, others_in_table);
            sent.push_back(Sent{it->hash, *it->message.key, it->message.key_owner, it->message.id, it->message.key_seq,
                                others_in_table, std::nullopt, 0});
        }
        outbox_mark_sent();
        return;
    }
    std::vector<Uuid> provisional;
    for (auto it = begin; it != end; ++it) provisional.push_back(it->message.key_seq);
    std::vector<Uuid> final_seqs = key_seqs_after(key_seq_memory_last(bucket), provisional);
    size_t i = 0;
    for (auto it = begin; it != end; ++it, ++i) {
        it->message.key_seq = final_seqs[i];
        emit_wal_message(it->message);
    }
    key_seq_memory_raise(bucket, final_seqs.back());
}

KeyOrderId key_order_id(const Sent& s) { return KeyOrderId{s.hash, s.key, s.owner}; }
KeyOrderId key_order_id(const Deferred& d) { return KeyOrderId{d.hash, *d.message.key, d.message.key_owner}; }

// A fresh snapshot, taken after the key locks, whose command id hides this transaction's own
// inserts: every earlier committer of the locked keys is visible in it. Unregister it.
Snapshot committed_by_others_snapshot() {
    return pg_call([] {
        Snapshot s = RegisterSnapshot(GetLatestSnapshot());
        s->curcid = FirstCommandId;
        return s;
    });
}

// The transaction's keyed work, taken out of the per-transaction lists (which are cleared).
struct KeyWork {
    std::vector<Sent> sent;           // in send order
    std::vector<Deferred> deferred;   // in send order
    std::vector<Released> released;   // sorted, each once
};

KeyWork take_key_work() {
    KeyWork work{std::move(sent_in_xact), std::move(deferred_in_xact), std::move(released_in_xact)};
    sent_in_xact.clear();
    deferred_in_xact.clear();
    released_in_xact.clear();
    std::sort(work.released.begin(), work.released.end());
    work.released.erase(std::unique(work.released.begin(), work.released.end()), work.released.end());
    return work;
}

// Phase 1: the buckets of every key the transaction sent or released, locked in one order, the
// same in every transaction. A transaction that only releases keys fails rather than waits on
// a prepared transaction (lock_released_buckets).
void lock_keys_in_global_order(const KeyWork& work) {
    std::vector<uint32> buckets;
    for (const Sent& s : work.sent) buckets.push_back(key_bucket(s.hash));
    for (const Deferred& d : work.deferred) buckets.push_back(key_bucket(d.hash));
    for (const Released& r : work.released) buckets.push_back(key_bucket(key_hash(r.key)));
    buckets = lock_order(std::move(buckets));
    if (work.sent.empty() && work.deferred.empty())
        lock_released_buckets(buckets, work.released);
    else
        for (uint32 b : buckets) lock_key_bucket(b);
}

// Phase 2, first step: the home of each key's deferred WAL messages (settle_deferred); those
// that become rows are appended to `sent`, for the next step to order.
void choose_deferred_homes(std::vector<Deferred>& deferred, bool preparing, std::vector<Sent>& sent) {
    Snapshot others = committed_by_others_snapshot();
    const auto id_of = [](const Deferred& d) { return key_order_id(d); };
    const auto sent_id_of = [](const Sent& s) { return key_order_id(s); };
    for (const KeyGroup& g : group_by_key(deferred, id_of)) {
        const KeyOrderId id = id_of(deferred[g.begin]);
        const bool in_table = has_key(sent, sent_id_of, id.key, id.owner);
        settle_deferred(deferred.begin() + g.begin, deferred.begin() + g.end, in_table, preparing, others, sent);
    }
    pg_call([&] { UnregisterSnapshot(others); });
}

// Phase 2, second step: the sent rows' final key_seqs (after the table's last of their key and
// the greatest issued in their bucket) and their head / waiting positions, written in one
// UPDATE for the rows whose key_seq or position changes.
void settle_sent_key_seqs(std::vector<Sent>& sent) {
    Snapshot others = committed_by_others_snapshot();
    std::vector<std::optional<Uuid>> ids, seqs, positions;
    std::vector<bool> moves;
    for (const KeyGroup& g : group_by_key(sent, [](const Sent& s) { return key_order_id(s); })) {
        const Sent& first = sent[g.begin];
        std::optional<Uuid> last = last_committed_key_seq(first.key, first.owner, others);
        std::vector<Uuid> provisional;
        for (size_t i = g.begin; i < g.end; ++i) provisional.push_back(sent[i].seq);
        // After the table's last and the greatest key_seq issued in the bucket, which includes
        // the key's messages that rode the stream (key_seq_memory.hpp).
        const uint32 bucket = key_bucket(first.hash);
        std::vector<Uuid> final_seqs = key_seqs_after(later_of(last, key_seq_memory_last(bucket)), provisional);
        key_seq_memory_raise(bucket, final_seqs.back());
        std::vector<bool> guessed;
        for (size_t i = g.begin; i < g.end; ++i) guessed.push_back(sent[i].waiting);
        std::vector<bool> waiting = settled_waiting(last.has_value(), std::move(guessed));
        for (size_t i = g.begin; i < g.end; ++i) {
            const Sent& s = sent[i];
            const bool move = waiting[i - g.begin] != s.waiting;
            if (final_seqs[i - g.begin] == s.seq && !move) continue;
            ids.push_back(s.id);
            seqs.push_back(final_seqs[i - g.begin]);
            moves.push_back(move);
            positions.push_back(waiting[i - g.begin] ? std::optional<Uuid>(waiting_position()) : s.head_position);
        }
    }
    pg_call([&] { UnregisterSnapshot(others); });
    if (ids.empty()) return;
    Datum values[] = {PointerGetDatum(uuid_array(ids)), PointerGetDatum(uuid_array(seqs)),
                      PointerGetDatum(bool_array(moves)), PointerGetDatum(uuid_array(positions))};
    AsExtensionOwner owner;
    restamp_plan.execute(pg_call([] { return GetTransactionSnapshot(); }), false, values, nullptr);
}

// Phase 3: the next message of each released key and owner, if it waits, gets its claim
// position (promote_plan); relays are woken when one became claimable.
void promote_next_of_released(const std::vector<Released>& released) {
    // A fresh snapshot (taken after the locks) that sees this transaction's own deletes.
    Snapshot latest = pg_call([] { return RegisterSnapshot(GetLatestSnapshot()); });
    std::vector<std::string> keys;
    std::vector<std::optional<Uuid>> seqs;
    std::vector<Oid> owners;
    for (const Released& r : released) {
        keys.push_back(r.key);
        seqs.push_back(r.seq);
        owners.push_back(r.owner);
    }
    Datum values[] = {PointerGetDatum(text_array(keys)), PointerGetDatum(uuid_array(seqs)),
                      PointerGetDatum(oid_array(owners))};
    Datum due = 0;
    {
        AsExtensionOwner owner;
        if (promote_plan.execute(latest, false, values, nullptr) == 1) spi_value(0, 1, &due);
    }
    // Messages became claimable: wake the relays as a send's commit does (the notifier's
    // callback runs after this one at commit: pg/common/module.cpp). Without it a relay serving
    // only their topic waited for its poll interval.
    if (DatumGetInt32(due) > 0) outbox_mark_sent();
    pg_call([&] { UnregisterSnapshot(latest); });
}

// The pre-commit step: every key lock in one order, then the sent messages' final key_seqs
// and head / waiting positions (after the deferred WAL messages' homes are chosen), then the
// promotion of released keys' next messages.
void settle_key_order(bool preparing) {
    KeyWork work = take_key_work();
    lock_keys_in_global_order(work);
    SpiSession spi;
    if (!work.deferred.empty()) choose_deferred_homes(work.deferred, preparing, work.sent);
    if (!work.sent.empty()) settle_sent_key_seqs(work.sent);
    if (!work.released.empty()) promote_next_of_released(work.released);
}

void xact_callback(XactEvent event, void*) {
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
        case XACT_EVENT_PRE_PREPARE:
            if (!sent_in_xact.empty() || !released_in_xact.empty() || !deferred_in_xact.empty()) {
                if (event == XACT_EVENT_PRE_PREPARE)
                    guarded_callback([] { settle_key_order(true); });
                else
                    guarded_callback([] { settle_key_order(false); });
            }
            break;
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PREPARE:
        case XACT_EVENT_PARALLEL_COMMIT:
        case XACT_EVENT_PARALLEL_ABORT:
            sent_in_xact.clear();
            deferred_in_xact.clear();
            released_in_xact.clear();
            key_owner_override.reset();   // (a scope unwound by an error restores it already)
            break;
        default:
            break;
    }
}

void subxact_callback(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
    if (sent_in_xact.empty() && deferred_in_xact.empty()) return;
    const int level = GetCurrentTransactionNestLevel();
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        sent_in_xact.erase(std::remove_if(sent_in_xact.begin(), sent_in_xact.end(),
                                          [&](const Sent& s) { return s.nest_level >= level; }),
                           sent_in_xact.end());
        // A deferred WAL message of an aborted subtransaction was never sent.
        deferred_in_xact.erase(std::remove_if(deferred_in_xact.begin(), deferred_in_xact.end(),
                                              [&](const Deferred& d) { return d.nest_level >= level; }),
                               deferred_in_xact.end());
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (Sent& s : sent_in_xact)
            if (s.nest_level >= level) s.nest_level = level - 1;
        for (Deferred& d : deferred_in_xact)
            if (d.nest_level >= level) d.nest_level = level - 1;
    }
}

}  // namespace

void outbox_key_order_init() {
    RegisterXactCallback(xact_callback, nullptr);
    RegisterSubXactCallback(subxact_callback, nullptr);
}

void outbox_key_order_sent(text* key, Oid owner, const Uuid& id, const Uuid& seq, bool waiting,
                           const std::optional<Uuid>& head_position) {
    std::string name(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
    uint32 h = key_hash(name);
    sent_in_xact.push_back(
        Sent{h, std::move(name), owner, id, seq, waiting, head_position, GetCurrentTransactionNestLevel()});
}

void lock_key_for_write_back(std::string_view key) {
    const uint32 bucket = key_bucket(key_hash(key));
    if (try_lock_transaction(LockClass::outbox_key, bucket)) return;
    // Held by a prepared transaction: its keyed messages are rows already (a transaction being
    // prepared puts them on the table), and every later producer of the bucket waits for its
    // lock and then sees the written-back row at its pre-commit step, so the lock adds nothing.
    // Waiting (or failing) would keep the message out of the table past COMMIT PREPARED, and
    // the prepared transaction's message of the key (a later key_seq) could be claimed first.
    for (const auto& held : held_by_prepared(LockClass::outbox_key))
        if (held.first == bucket) return;
    lock_key_bucket(bucket);   // a running transaction's commit: wait for it (the relay bounds the wait)
}

void outbox_key_order_deferred(WalMessage message, const RouteFacts& routed) {
    // The tag's key is read with SPI on a backend's first use, which the pre-commit step (no
    // outer snapshot) cannot do: read it now, inside the sending statement (one HMAC of
    // nothing per transaction; the key is read once per backend).
    if (deferred_in_xact.empty()) (void)wal_message_hmac_tag({}, {});
    uint32 h = key_hash(*message.key);
    deferred_in_xact.push_back(Deferred{h, std::move(message), routed, GetCurrentTransactionNestLevel()});
}

void outbox_key_released(std::string_view key, Oid owner, const Uuid& seq) {
    released_in_xact.push_back(Released{std::string(key), owner, seq});
}

Oid current_key_owner() { return key_owner_override ? *key_owner_override : GetUserId(); }

KeyOwnerScope::KeyOwnerScope(Oid owner) : saved_(key_owner_override) { key_owner_override = owner; }
KeyOwnerScope::~KeyOwnerScope() { key_owner_override = saved_; }

ArrayType* prepared_key_buckets() {
    static std::vector<int32> buckets;
    static TimestampTz read_at = 0;
    if (max_prepared_xacts == 0) return nullptr;
    TimestampTz now = GetCurrentTimestamp();
    if (now - read_at >= 1000 * 1000 || now < read_at) {
        buckets.clear();
        for (const auto& held : held_by_prepared(LockClass::outbox_key)) buckets.push_back(static_cast<int32>(held.first));
        read_at = now;
    }
    if (buckets.empty()) return nullptr;
    return pg_call([&] {
        std::vector<Datum> d;
        for (int32 b : buckets) d.push_back(Int32GetDatum(b));
        return construct_array(d.data(), static_cast<int>(d.size()), INT4OID, 4, true, TYPALIGN_INT);
    });
}

}  // namespace once::pg

using namespace once;
using namespace once::pg;

// once._outbox_key_bucket(key text) RETURNS integer: the lock bucket of a key (claims and
// once.blocked_keys compare it with the buckets prepared transactions hold).
ONCE_SQL_FUNCTION(once_outbox_key_bucket) {
    text* key = PG_GETARG_TEXT_PP(0);
    PG_RETURN_INT32(static_cast<int32>(key_bucket(key_hash(text_view(key)))));
}

// once._outbox_prepared_buckets() RETURNS TABLE (bucket integer, transaction xid): the lock
// buckets prepared transactions hold, read now.
ONCE_SQL_FUNCTION(once_outbox_prepared_buckets) {
    pg_call([&] { InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (const auto& [bucket, xid] : held_by_prepared(LockClass::outbox_key)) {
        Datum values[] = {Int32GetDatum(static_cast<int32>(bucket)), TransactionIdGetDatum(xid)};
        bool nulls[] = {false, !TransactionIdIsValid(xid)};
        pg_call([&] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls); });
    }
    return (Datum)0;
}
