// The current transaction's claim_locked messages: outbox_locked.hpp.
#include "pg/outbox/outbox_locked.hpp"

#include "core/error.hpp"
#include "pg/common/guard.hpp"

extern "C" {
#include "utils/datum.h"
}

#include <map>

namespace once::pg {
namespace {

struct Entry {
    LockedMessage message;
    int claimed_level;  // subtransaction nest level of the claim (its abort undoes the delete)
    int settled_level;  // level of the ack / nack / dead that settled it; 0 = unsettled
};

std::map<Uuid, Entry> claimed;  // cleared at the end of every transaction

// A detoasted copy: the row's TOAST chunks were deleted with it.
Datum copy_varlena(Datum d) {
    if (d == 0) return 0;
    return pg_call([&] {
        MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
        Datum copy = PointerGetDatum(PG_DETOAST_DATUM_COPY(d));
        MemoryContextSwitchTo(old);
        return copy;
    });
}

Datum copy_uuid(Datum d) {
    if (d == 0) return 0;
    return pg_call([&] {
        MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
        Datum copy = datumCopy(d, false, UUID_LEN);
        MemoryContextSwitchTo(old);
        return copy;
    });
}

size_t unsettled_count() {
    size_t n = 0;
    for (const auto& [id, e] : claimed)
        if (e.settled_level == 0) ++n;
    return n;
}

// Before COMMIT (and PREPARE): committing an unsettled claim would lose its message.
void check_settled() {
    const size_t n = unsettled_count();
    if (n == 0) return;
    claimed.clear();  // the error aborts the transaction, which gives them all back
    throw Error(ErrorCode::claim_unsettled,
                std::to_string(n) + " message" + (n == 1 ? " was" : "s were") +
                    " claimed with once.claim_locked but neither acknowledged nor given back",
                "Committing would have deleted them undelivered; the transaction was rolled back, so "
                "every message it claimed is back in the outbox.",
                "Before COMMIT, call once.ack for the delivered ids and once.nack or once.dead for the "
                "others; or ROLLBACK to give them all back.");
}

void xact_callback(XactEvent event, void*) {
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
        case XACT_EVENT_PRE_PREPARE:
            if (!claimed.empty()) guarded_callback(check_settled);
            claimed.clear();
            break;
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PREPARE:
        case XACT_EVENT_PARALLEL_COMMIT:
        case XACT_EVENT_PARALLEL_ABORT:
            claimed.clear();
            break;
        default:
            break;
    }
}

void subxact_callback(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
    if (claimed.empty()) return;
    const int level = GetCurrentTransactionNestLevel();
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        for (auto it = claimed.begin(); it != claimed.end();) {
            if (it->second.claimed_level >= level) {
                it = claimed.erase(it);  // the delete is undone: the message is back
                continue;
            }
            if (it->second.settled_level >= level) it->second.settled_level = 0;  // settling undone
            ++it;
        }
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        for (auto& [id, e] : claimed) {
            if (e.claimed_level >= level) e.claimed_level = level - 1;
            if (e.settled_level >= level) e.settled_level = level - 1;
        }
    }
}

}  // namespace

void outbox_locked_init() {
    RegisterXactCallback(xact_callback, nullptr);
    RegisterSubXactCallback(subxact_callback, nullptr);
}

const LockedMessage& outbox_locked_claimed(const LockedMessage& m) {
    LockedMessage copy = m;
    copy.topic = copy_varlena(m.topic);
    copy.key = copy_varlena(m.key);
    copy.key_seq = copy_uuid(m.key_seq);
    copy.payload = copy_varlena(m.payload);
    copy.headers = copy_varlena(m.headers);
    copy.content_type = copy_varlena(m.content_type);
    Entry& e = claimed[m.id] = Entry{copy, GetCurrentTransactionNestLevel(), 0};
    return e.message;
}

const LockedMessage* outbox_locked_find(const Uuid& id) {
    auto it = claimed.find(id);
    if (it == claimed.end() || it->second.settled_level != 0) return nullptr;
    return &it->second.message;
}

bool outbox_locked_settle(const Uuid& id) {
    auto it = claimed.find(id);
    if (it == claimed.end() || it->second.settled_level != 0) return false;
    // (level 1 is the top transaction; a settle there can only be undone by ROLLBACK)
    it->second.settled_level = GetCurrentTransactionNestLevel();
    return true;
}

std::vector<std::string> outbox_locked_keys() {
    std::vector<std::string> keys;
    for (const auto& [id, e] : claimed)
        if (e.settled_level == 0 && e.message.key != 0) {
            const text* k = DatumGetTextPP(e.message.key);
            keys.emplace_back(VARDATA_ANY(k), VARSIZE_ANY_EXHDR(k));
        }
    return keys;
}

}  // namespace once::pg
