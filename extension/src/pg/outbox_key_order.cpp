// Per-key order decided at commit; the mechanism and why: outbox_key_order.hpp, docs/outbox.md.
#include "outbox_key_order.hpp"

#include "../core/outbox_policy.hpp"
#include "guard.hpp"
#include "locks.hpp"
#include "spi.hpp"

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
    Uuid id;
    Uuid seq;             // provisional key_seq (send order)
    int nest_level;       // subtransaction that inserted it (dropped when that one aborts)
};

// In send order. Cleared at the end of every transaction.
std::vector<Sent> sent_in_xact;

uint32 key_hash(std::string_view key) {
    return hash_bytes(reinterpret_cast<const unsigned char*>(key.data()), static_cast<int>(key.size()));
}

// The one place an outbox key lock is taken (transaction-scoped, released after the commit
// is visible; a lock tag SQL cannot reach: locks.hpp).
void lock_key_hash(uint32 h) { lock_transaction(LockClass::outbox_key, h); }

SavedPlan last_key_seq_plan(
    "SELECT o.key_seq FROM once.outbox o"
    " WHERE o.key OPERATOR(pg_catalog.=) $1 AND o.key IS NOT NULL"
    " ORDER BY o.key_seq DESC LIMIT 1",
    {TEXTOID});

SavedPlan restamp_plan(
    "UPDATE once.outbox o SET key_seq = u.seq"
    "  FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.uuid[]), pg_catalog.unnest($2::pg_catalog.uuid[]))"
    "       AS u(id, seq)"
    " WHERE o.id OPERATOR(pg_catalog.=) u.id",
    {UUIDARRAYOID, UUIDARRAYOID});

Datum uuid_datum(const Uuid& id) {
    auto* u = static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t)));
    std::memcpy(u->data, id.data(), UUID_LEN);
    return UUIDPGetDatum(u);
}

Datum uuid_array(const std::vector<Uuid>& ids) {
    return pg_call([&] {
        Datum* elems = static_cast<Datum*>(palloc(sizeof(Datum) * ids.size()));
        for (size_t i = 0; i < ids.size(); ++i) elems[i] = uuid_datum(ids[i]);
        return PointerGetDatum(construct_array(elems, static_cast<int>(ids.size()), UUIDOID, UUID_LEN, false,
                                               TYPALIGN_CHAR));
    });
}

// The greatest key_seq of `key` committed by other transactions, as of now: a fresh snapshot
// (also under REPEATABLE READ) whose command id hides this transaction's own inserts.
std::optional<Uuid> last_committed_key_seq(const std::string& key, Snapshot others) {
    Datum values[] = {pg_call([&] {
        return PointerGetDatum(cstring_to_text_with_len(key.data(), static_cast<int>(key.size())));
    })};
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

void stamp_key_order() {
    if (sent_in_xact.empty()) return;
    // Lock order: by hash, then key; send order kept within a key (stable sort).
    std::vector<Sent> sent = std::move(sent_in_xact);
    sent_in_xact.clear();
    std::stable_sort(sent.begin(), sent.end(), [](const Sent& a, const Sent& b) {
        return std::tie(a.hash, a.key) < std::tie(b.hash, b.key);
    });

    SpiSession spi;
    std::optional<uint32> locked;
    for (size_t begin = 0; begin < sent.size();) {
        size_t end = begin;
        while (end < sent.size() && sent[end].hash == sent[begin].hash && sent[end].key == sent[begin].key) ++end;
        if (locked != sent[begin].hash) {
            lock_key_hash(sent[begin].hash);
            locked = sent[begin].hash;
        }
        // Taken after the lock: every earlier committer of the key is visible in it.
        Snapshot others = pg_call([] {
            Snapshot s = RegisterSnapshot(GetLatestSnapshot());
            s->curcid = FirstCommandId;
            return s;
        });
        std::optional<Uuid> last = last_committed_key_seq(sent[begin].key, others);
        pg_call([&] { UnregisterSnapshot(others); });

        std::vector<Uuid> provisional;
        for (size_t i = begin; i < end; ++i) provisional.push_back(sent[i].seq);
        std::vector<Uuid> final_seqs = key_seqs_after(last, provisional);
        std::vector<Uuid> ids, seqs;
        for (size_t i = begin; i < end; ++i)
            if (final_seqs[i - begin] != sent[i].seq) {
                ids.push_back(sent[i].id);
                seqs.push_back(final_seqs[i - begin]);
            }
        if (!ids.empty()) {
            Datum values[] = {uuid_array(ids), uuid_array(seqs)};
            AsExtensionOwner owner;
            restamp_plan.execute(pg_call([] { return GetTransactionSnapshot(); }), false, values, nullptr);
        }
        begin = end;
    }
}

void xact_callback(XactEvent event, void*) {
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
        case XACT_EVENT_PRE_PREPARE:
            if (!sent_in_xact.empty()) guarded_callback(stamp_key_order);
            break;
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PREPARE:
        case XACT_EVENT_PARALLEL_COMMIT:
        case XACT_EVENT_PARALLEL_ABORT:
            sent_in_xact.clear();
            break;
        default:
            break;
    }
}

void subxact_callback(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
    if (sent_in_xact.empty()) return;
    const int level = GetCurrentTransactionNestLevel();
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        sent_in_xact.erase(std::remove_if(sent_in_xact.begin(), sent_in_xact.end(),
                                          [&](const Sent& s) { return s.nest_level >= level; }),
                           sent_in_xact.end());
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (Sent& s : sent_in_xact)
            if (s.nest_level >= level) s.nest_level = level - 1;
    }
}

}  // namespace

void outbox_key_order_init() {
    RegisterXactCallback(xact_callback, nullptr);
    RegisterSubXactCallback(subxact_callback, nullptr);
}

void outbox_key_order_sent(text* key, const Uuid& id, const Uuid& seq) {
    std::string name(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
    uint32 h = key_hash(name);
    sent_in_xact.push_back(Sent{h, std::move(name), id, seq, GetCurrentTransactionNestLevel()});
}

}  // namespace once::pg
