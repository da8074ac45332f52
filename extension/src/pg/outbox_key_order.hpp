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
//
// Heads and waiting messages (0.2). Only a key's head (its message with the smallest key_seq)
// can be claimed; the others wait, with the claim position waiting_position(), outside every
// range a claim reads, so a key's backlog behind an in-flight, retrying or dead head costs
// claims nothing (issue 10). once.send guesses at send time (a waiting message when the key
// has messages in the outbox, its own earlier ones included); the pre-commit step, under the
// key's lock, makes it true: the first message of the key is the head when no other
// transaction's message of the key is left, every other one waits. A transaction that removed
// a key's head (ack, discard) promotes the key's next message in the same pre-commit step,
// under the same lock: a producer that commits while the head is being acknowledged either
// sees the head (and waits, then is promoted) or sees it gone (and is the head).
#pragma once

#include "../core/uuid_v7.hpp"
#include "postgres_headers.hpp"

#include <optional>
#include <string_view>

namespace once::pg {

// Called from _PG_init: registers the transaction callbacks.
void outbox_key_order_init();

// A keyed message was inserted in the current (sub)transaction with provisional key_seq `seq`,
// as a waiting message (position waiting_position()) or not; `head_position` is its claim
// position as the head (nullopt: its id).
void outbox_key_order_sent(text* key, const Uuid& id, const Uuid& seq, bool waiting,
                           const std::optional<Uuid>& head_position);

// The current transaction removed a message of `key` (key_seq `seq`; nil: unknown) that may
// have been its head: the key's next message is promoted at commit.
void outbox_key_released(std::string_view key, const Uuid& seq);

}  // namespace once::pg
