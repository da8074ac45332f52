// The WAL transport's per-key rules between the stream and the outbox table (docs/design.md,
// "Per-key order between the stream and the table"): never two messages of one (key,
// key_owner) in flight, and behind a message of a key written back to the table, the key's
// later stream messages follow it there, each fenced for this relay's slot until the slot is
// confirmed past its write-back.
//
// Blocking: reload, release_up_to and table_holds query the relay's ordinary database
// connection synchronously on the event loop. That is acceptable because each is one short
// indexed query, made only when it matters (at open, at most once per status update while
// rows stay fenced, and for the front message of a key written back), and while it runs the
// stream only waits: the walsender buffers, and nothing is confirmed early.
#pragma once

#include "claim/wal_store.hpp"
#include "wal/lsn.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <utility>

namespace once::relay {

class WalKeyFences {
public:
    using KeyOwner = std::pair<std::string, uint32_t>;

    explicit WalKeyFences(WalStore& store) : store_(store) {}

    // At open: releases the fences below the slot's confirmed position (settled, by this relay
    // before a kill -9, say) and takes the keys still fenced as written back. Throws on failure.
    void reload();
    // Releases the fences up to `confirmed`, when some are left and it moved on since; a
    // failure is logged and retried with the next confirmation.
    void release_up_to(wal::Lsn confirmed);
    // Rows still fenced, as last released or written back since.
    bool any_left() const { return fences_left_ > 0; }

    bool in_flight(const KeyOwner& k) const { return in_flight_.count(k) > 0; }
    void hold(const KeyOwner& k) { in_flight_.insert(k); }
    void hold(const std::set<KeyOwner>& keys) { in_flight_.insert(keys.begin(), keys.end()); }
    void let_go(const KeyOwner& k) { in_flight_.erase(k); }
    // The stream resets: nothing is in flight any more (unsettled messages come again).
    void forget_in_flight() { in_flight_.clear(); }

    // Whether the key's later stream messages follow it into the table: it was written back
    // and (blocking: once.wal_key_in_table) the table still holds a message of it. When the
    // table holds none, the key's home is the stream again. Throws when the database cannot
    // be asked.
    bool table_holds(const KeyOwner& k);
    // A keyed message was written back (fenced): the key's later stream messages follow it.
    void written_back(const KeyOwner& k) {
        written_back_.insert(k);
        fences_left_++;
    }
    // A message written back behind its key (already followed): one more row fenced.
    void written_back_behind_its_key() { fences_left_++; }

private:
    WalStore& store_;
    std::set<KeyOwner> in_flight_;      // keys of messages claimed and not yet settled
    std::set<KeyOwner> written_back_;   // keys written back: later stream messages follow them
    int fences_left_ = 0;               // rows still fenced, as last released
    wal::Lsn released_to_ = 0;
};

}  // namespace once::relay
