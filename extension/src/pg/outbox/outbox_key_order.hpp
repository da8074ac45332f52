// Per-key order of outbox messages, decided at commit.
//
// A key orders the messages one role sent with it: "the key" below is
// always the pair (key, key_owner), key_owner being the role that called once.send. Another
// role's messages of the same key are another sequence, so no role can hold back another's
// messages with a message of its own (a deliver_at years ahead, a topic no relay serves).
// Messages already in the outbox when 0.2 was updated have owner 0: a claim takes a role's
// message only after the earlier owner-0 messages of its key (outbox_claim.cpp), so the order
// of the update's in-flight messages holds too. Key locks stay per key name (their bucket):
// two roles' messages of a key only share the short wait of a commit.
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
// Waiting messages. Only a key's oldest message can be claimed (the claim checks
// key_seq). Messages behind a *held* message of their key -- leased to a relay, retrying,
// delayed or dead -- also wait with the claim position waiting_position(), outside every
// range a claim reads, so the backlog that builds up behind a hold costs claims nothing.
// Behind a ready message nothing waits: it is claimed at once, and skipping what
// follows it once or twice is cheaper than a promotion (a rewrite of the row).
//  * once.send guesses at send time: it waits when the key's last message waits or is held.
//  * once.nack / once.dead (outbox_settle.cpp) make what is queued behind the message they
//    give back wait (once per hold).
//  * The pre-commit step, under the key's lock, makes sure a waiting message has a message
//    to wait for: the first message of the key cannot wait when no other transaction's
//    message of the key is left.
//  * A transaction that removed a message (ack, discard) promotes the next one, if it waits,
//    in the same pre-commit step under the same lock: a producer that commits meanwhile either
//    sees the removed message (its message waits, then is promoted) or sees it gone (its
//    message does not wait).
//
// Prepared transactions. A prepared transaction that sent a key keeps
// that key's lock (its bucket's) until COMMIT / ROLLBACK PREPARED, which may be never. A
// commit that only releases keys -- a relay's acks and nacks, an admin's discard -- does not
// wait for one: it fails at once with ON216, naming the key and the prepared transaction (the
// relay gives its batch back). Claims skip the keys of buckets a prepared transaction holds
// (prepared_key_buckets), so the relay goes on with every other key, and once.blocked_keys
// lists them with reason 'prepared'.
#pragma once

#include "core/message_route.hpp"
#include "core/uuid_v7.hpp"
#include "core/wal_message.hpp"
#include "pg/common/postgres_headers.hpp"

#include <optional>
#include <string_view>

namespace once::pg {

// Called from _PG_init: registers the transaction callbacks.
void outbox_key_order_init();

// A keyed message was inserted in the current (sub)transaction with provisional key_seq `seq`,
// as a waiting message (position waiting_position()) or not; `head_position` is its claim
// position as the head (nullopt: its id).
// `owner` is the sending role.
void outbox_key_order_sent(text* key, Oid owner, const Uuid& id, const Uuid& seq, bool waiting,
                           const std::optional<Uuid>& head_position);

// A keyed message of the WAL transport (Route::wal_at_commit for the facts `routed`:
// core/message_route.hpp), with key, key_owner and its provisional key_seq set: held in memory
// until the pre-commit step, which, under the key's lock, routes it again with the same rule:
// emits it with its final key_seq when the table holds no message of the key, and otherwise
// inserts it as a row ("a key has one home at a time",
// docs/design.md). Dropped when its subtransaction aborts. A transaction that is prepared puts
// its deferred messages on the table (PRE_PREPARE): a prepared transaction's fate is open for
// an unbounded time, and its rows are what once.blocked_keys and the relays already handle.
void outbox_key_order_deferred(WalMessage message, const RouteFacts& routed);

// Takes the lock of `key`'s bucket until the end of the transaction, as a commit of the key
// does (once.wal_write_back of a keyed message: every producer of the key then either
// committed before, or sees the written-back row at its pre-commit step). A bucket a prepared
// transaction holds is passed over, neither waited for nor an error: that transaction's keyed
// messages are rows, and the producers after it wait for it.
void lock_key_for_write_back(std::string_view key);

// The current transaction removed a message of `key` sent by `owner` (key_seq `seq`; nil:
// unknown) that may have been its head: the next message of that key and owner is promoted at
// commit.
void outbox_key_released(std::string_view key, Oid owner, const Uuid& seq);

// The role whose order a keyed once.send joins: the current role, unless a KeyOwnerScope is
// alive.
Oid current_key_owner();

// While alive, once.send records `owner` as its keyed messages' key_owner instead of the
// current role: a saga's commands are sent by whichever role drives it (saga_start, a reply,
// saga_tick) and must stay one order, the order of the role that started the saga
// (pg/saga/saga_store.cpp).
class KeyOwnerScope {
public:
    explicit KeyOwnerScope(Oid owner);
    ~KeyOwnerScope();
    KeyOwnerScope(const KeyOwnerScope&) = delete;
    KeyOwnerScope& operator=(const KeyOwnerScope&) = delete;

private:
    std::optional<Oid> saved_;
};

// The lock buckets that prepared transactions hold now, for claims to skip (NULL: none, and
// always NULL with max_prepared_transactions = 0). Refreshed at most once a second per backend:
// a claim made in between may still take such a key, and its commit then fails with ON216.
ArrayType* prepared_key_buckets();

}  // namespace once::pg
