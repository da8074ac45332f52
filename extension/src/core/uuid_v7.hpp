// Time-ordered UUIDs (RFC 9562, version 7) for message ids: sorting by id sorts by creation
// time, so the outbox primary key index is appended to at its right edge instead of being
// written all over (as random v4 ids would).
//
// Layout: 48-bit Unix milliseconds | ver 7 | 12-bit counter | var 10 | 62 random bits.
// Within one generator ids are strictly increasing (RFC 9562 method 1, "fixed-length dedicated
// counter"): several ids in the same millisecond count up; when the counter would overflow, or
// the clock steps back, the timestamp is carried forward instead.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace once {

using Uuid = std::array<uint8_t, 16>;

class UuidV7Generator {
public:
    // random: 10 bytes of fresh randomness from the caller (the boundary uses
    // pg_strong_random, tests use fixed bytes).
    Uuid next(uint64_t unix_ms, const std::array<uint8_t, 10>& random);

private:
    uint64_t last_ms_ = 0;
    uint16_t counter_ = 0;  // 12 bits used
};

// Milliseconds since the Unix epoch stored in a v7 uuid.
uint64_t uuid_v7_unix_ms(const Uuid& id);

// A version 8 uuid (RFC 9562, "custom") made of the first 16 bytes of a hash: version 8 and
// variant 10 replace 6 of its bits.
Uuid uuid_v8_from_hash(const uint8_t* hash16);

// What a role-scoped message id hashes (docs/outbox.md, "message_id"): a fixed prefix, the
// role's name and the id the producer chose, separated by NUL bytes (a role name holds none).
std::string role_scoped_id_input(std::string_view role, const Uuid& chosen);

// Canonical 8-4-4-4-12 lowercase hex form.
std::string uuid_to_string(const Uuid& id);

}  // namespace once
