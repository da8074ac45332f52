// The greatest key_seq issued per key-lock bucket, in shared memory (WAL transport, keyed
// messages: docs/design.md "Per-key order between the stream and the table").
//
// A keyed message that rides the WAL leaves no row behind, so the table alone no longer knows
// the greatest key_seq of a key committed so far. The pre-commit step (outbox_key_order.cpp)
// reads and raises the value of the key's bucket while it holds that bucket's lock, so the
// next committer of any key of the bucket draws its key_seq after it. A bucket holds many
// keys (and the same bucket number of every database): its value is an upper bound of each of
// its keys' greatest key_seq, which is all the rule needs (later stamps must be greater).
//
// Only with pg_once in shared_preload_libraries: without it there is no such memory and keyed
// messages stay on the table in wal mode. After a server restart the memory is empty; the
// next stamp is then a fresh v7 id of the clock, after every earlier one unless the clock
// stepped back across the restart (the assumption v7 ids make anyway).
#pragma once

#include "core/uuid_v7.hpp"
#include "pg/common/postgres_headers.hpp"

#include <optional>

namespace once::pg {

// One entry per key-lock bucket (outbox_key_order.cpp checks it equals its bucket count).
inline constexpr uint32 kKeySeqMemoryBuckets = 256;

// Called from _PG_init: requests the memory when pg_once is being preloaded.
void key_seq_memory_init();

// Whether the memory exists (pg_once was preloaded).
bool key_seq_memory_available();

// The greatest key_seq issued in `bucket` since the server started (nullopt: none, or no
// memory). Read and raise it only while holding the bucket's lock.
std::optional<Uuid> key_seq_memory_last(uint32 bucket);

// Raises the bucket's value to `seq` if that is greater.
void key_seq_memory_raise(uint32 bucket, const Uuid& seq);

}  // namespace once::pg
