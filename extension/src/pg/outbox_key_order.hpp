// Per-key order of outbox messages, decided at commit.
//
// once.send and once.send_many take no lock. A keyed message gets a provisional key_seq (its
// generated v7 id: strictly increasing within a backend, so send order within a transaction)
// and is remembered here. In the transaction's pre-commit step (XACT_EVENT_PRE_COMMIT /
// PRE_PREPARE) the keys' locks are taken in one global order (hash of the key), and for each
// key the greatest key_seq committed by other transactions is read with a fresh snapshot; if
// one of them lies at or after this transaction's first provisional key_seq of that key (a
// producer that sent later but committed earlier), this transaction's messages of the key are
// renumbered after it, keeping their send order. The locks are held until the commit is
// visible, so the next producer of the key reads this one's key_seq.
//
// Result: key_seq order is the order in which the producers' transactions committed, send
// order within one transaction; producers never wait on one another while their transactions
// are open, only for another producer's commit of the same key; and as every committer takes
// its locks in the same order, they cannot deadlock on them.
#pragma once

#include "../core/uuid_v7.hpp"
#include "postgres_headers.hpp"

namespace once::pg {

// Called from _PG_init: registers the transaction callbacks.
void outbox_key_order_init();

// A keyed message was inserted in the current (sub)transaction with provisional key_seq `seq`.
void outbox_key_order_sent(text* key, const Uuid& id, const Uuid& seq);

}  // namespace once::pg
