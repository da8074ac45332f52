// The WAL transport's confirmation rule (docs/design.md, "Confirmation rule"): which position
// of the slot may be confirmed, given which messages are settled. A message is settled once
// the sink acknowledged it or it was written back to the outbox table; the slot may move past
// a transaction only when every message of it, and of every transaction before it, is.
//
//   flush position = the end LSN of the last transaction T such that every pg_once message
//                    of T and of every earlier transaction is settled
//
// Messages settle in any order (a pipelined sink acknowledges out of order); transactions are
// fed in commit order, as the stream delivers them. Pure bookkeeping: the caller feeds it the
// stream's events and the sink's outcomes and hands flush_position() to
// ReplicationStream::confirm.
#pragma once

#include "wal/lsn.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

namespace once::relay::wal {

class FlushTracker {
public:
    // A message of the transaction committed at commit_lsn arrived (OutboxMessageEvent).
    // Transactions arrive in commit order: commit_lsn is the open transaction's or a later one.
    // commit_time: the transaction's commit time (PostgreSQL epoch, microseconds).
    void message_received(Lsn commit_lsn, int64_t commit_time = 0);

    // The transaction's Commit arrived (TransactionEndEvent): it has no more messages.
    void transaction_ended(Lsn commit_lsn, Lsn end_lsn, int64_t commit_time = 0);

    // One message of the transaction committed at commit_lsn is settled.
    void message_settled(Lsn commit_lsn);

    // The server has sent everything below keepalive_end (ReplicationStream::idle_position);
    // with nothing unsettled and no transaction open, the slot may move there.
    void idle(Lsn keepalive_end);

    // Never moves backwards; 0 until something may be confirmed.
    Lsn flush_position() const { return flush_; }

    // Messages received and not settled yet.
    size_t unsettled() const { return unsettled_; }

    // The commit time of the oldest transaction the flush position has not passed yet (what
    // once_wal_slot_lag_seconds measures from); nullopt when nothing is pending.
    std::optional<int64_t> oldest_pending_commit_time() const;

private:
    struct Transaction {
        Lsn commit_lsn;
        Lsn end_lsn;
        size_t outstanding;
        bool ended;
        int64_t commit_time;
    };

    Transaction& find(Lsn commit_lsn, const char* what);
    void advance();

    std::deque<Transaction> transactions_;  // in commit order, the settled prefix popped
    size_t unsettled_ = 0;
    Lsn flush_ = 0;
};

}  // namespace once::relay::wal
