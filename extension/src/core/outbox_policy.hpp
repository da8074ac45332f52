// Outbox rules that need no server: retry decisions, argument limits, relay names and the
// positions (time-ordered UUIDs) that order the claim scan. Unit-tested in
// tests/unit/core/outbox_policy_test.cpp; the PostgreSQL boundary is pg/outbox/outbox_settle.cpp.
#pragma once

#include "backoff.hpp"
#include "uuid_v7.hpp"

#include <cstdint>
#include <optional>
#include <vector>
#include <string_view>

namespace once {

// Largest claim batch and largest send_many array. A relay that wants more calls again.
constexpr int kMaxClaimBatch = 10000;
constexpr int kMaxSendMany = 10000;

// A topic's retry policy (once.topic_policy); the defaults apply to topics without a row.
// They are written here (the claim statement and the give-back decisions use these) and, as
// column and parameter defaults, in sql/src/20_outbox.sql (once.outbox_topic_policies,
// once.topic_policy), where SQL needs literals: change both.
struct RetryPolicy {
    int max_attempts = 25;
    BackoffPolicy backoff{1000, 3600000};  // 1 s first window, 1 h cap
};

// Throws invalid_policy naming the bad value.
void validate_policy(const RetryPolicy& policy);

// What a nack does with a message that has been delivered `attempt` times (attempt >= 1).
struct NackDecision {
    bool dead = false;     // attempts exhausted: move to the dead letters
    int64_t delay_ms = 0;  // otherwise: next attempt not before now + delay_ms
};

// retry_after_ms: the relay's own delay (e.g. an HTTP Retry-After), or nullopt for the
// policy's capped exponential backoff with full jitter (uniform01 in [0, 1)). An explicit
// retry_after does not save a message from dying after max_attempts.
NackDecision decide_nack(const RetryPolicy& policy, int attempt,
                         std::optional<int64_t> retry_after_ms, double uniform01);

// Claim batch size: 1..kMaxClaimBatch, else invalid_batch.
void validate_batch(int64_t batch);
// Relay names identify the lease holder: the name rule of key_validation.hpp (invalid_relay).
void validate_relay(std::string_view relay);
// Ordering keys: the name rule of key_validation.hpp (invalid_message_key).
void validate_message_key(std::string_view key);

// The smallest v7 uuid of millisecond `unix_ms` (version and variant bits set, the rest 0):
// every id generated in that millisecond or later sorts at or after it.
Uuid uuid_v7_floor(uint64_t unix_ms);
// A v7 uuid for millisecond `unix_ms` without touching a generator's state (used for the
// claim position of delayed messages, which lies in the future).
Uuid uuid_v7_at(uint64_t unix_ms, const std::array<uint8_t, 10>& random);
// The next v7 uuid after `id`: the 62 random bits count up, carrying into the 12-bit counter
// and then the timestamp. Used to keep a key's send order when two backends generate ids in
// the same millisecond.
Uuid uuid_v7_successor(const Uuid& id);

// A key's order as decided at commit. `provisional` are the key_seq values one transaction
// gave its messages of one key at send time, in send order (strictly increasing); `last` is
// the greatest key_seq of that key committed by other transactions, if any. Returns the final
// key_seq values: send order kept, every one after `last`. Values already after `last` are
// kept, so a transaction nobody overtook rewrites nothing.
std::vector<Uuid> key_seqs_after(const std::optional<Uuid>& last, const std::vector<Uuid>& provisional);

// The claim position of a keyed message that waits behind an earlier message of its key that
// is held (in flight under a lease, retrying, delayed or dead): the greatest uuid. Every range
// a claim or its low watermark reads ends before it, so a held key's backlog costs claims
// nothing. Removing the message before it (ack, discard) gives it a real position (its
// promotion).
Uuid waiting_position();

// The two reserved claim positions as SQL literals, for the statements that set or test them
// (used as adjacent string literals: "... pos = " ONCE_SQL_WAITING_POSITION " ..."):
//  - waiting: waiting_position(), a message behind a held message of its key;
//  - dead: the least uuid, a dead letter (visible_at 'infinity' too), outside every claim range.
#define ONCE_SQL_WAITING_POSITION "'ffffffff-ffff-ffff-ffff-ffffffffffff'::pg_catalog.uuid"
#define ONCE_SQL_DEAD_POSITION "'00000000-0000-0000-0000-000000000000'::pg_catalog.uuid"

// One transaction's messages of a key at commit, in send order, guessed waiting or not at send
// time: a waiting message must have an earlier message of its key to wait for, so the first
// one cannot wait when no other transaction's message of the key is left. The other guesses
// stand (a message that does not wait behind another is only read, and skipped, by claims).
std::vector<bool> settled_waiting(bool key_has_others, std::vector<bool> guessed);

}  // namespace once
