// Whether a transaction the stream delivered is visible to other sessions yet. A walsender
// decodes a transaction once its commit record is flushed, and PostgreSQL makes the commit
// visible to new snapshots only after that (when it leaves the running set): for a moment a
// consumer could get the message and not find the producer's writes (a reply to a saga the
// producer's database does not show yet, a webhook whose receiver fetches the order). So the
// relay publishes a stream message only once its transaction is visible to a snapshot taken
// after it arrived (pg_current_snapshot()).
//
// Pure logic: the snapshot's text and the transaction's 32-bit xid (pgoutput's Begin) in,
// the answer out.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace once::relay::wal {

// pg_current_snapshot() as text: "xmin:xmax:xip1,xip2,..." (64-bit transaction ids).
struct SnapshotXids {
    uint64_t xmin = 0;
    uint64_t xmax = 0;               // every transaction id at or above it was running (or not yet begun)
    std::vector<uint64_t> xip;       // the transactions running when the snapshot was taken
};

// Throws std::invalid_argument when `text` is not a snapshot's text.
SnapshotXids parse_snapshot(std::string_view text);

// Whether the committed transaction `xid` (32 bits, as pgoutput sends it) is visible to the
// snapshot: below xmax and not running. A committed xid is within 2^31 of xmax (PostgreSQL's
// wraparound limit), which places it in the 64-bit id space.
bool committed_xid_visible(uint32_t xid, const SnapshotXids& snapshot);

}  // namespace once::relay::wal
