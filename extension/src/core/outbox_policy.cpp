#include "outbox_policy.hpp"

#include "key_validation.hpp"

#include "error.hpp"

#include <string>

namespace once {

void validate_policy(const RetryPolicy& p) {
    if (p.max_attempts < 1 || p.max_attempts > 1000)
        throw Error(ErrorCode::invalid_policy, "max_attempts must be between 1 and 1000",
                    "max_attempts was " + std::to_string(p.max_attempts) + ".");
    if (p.backoff.base_ms < 1)
        throw Error(ErrorCode::invalid_policy, "backoff_base must be at least 1 millisecond",
                    "backoff_base was " + std::to_string(p.backoff.base_ms) + " ms.");
    if (p.backoff.cap_ms < p.backoff.base_ms)
        throw Error(ErrorCode::invalid_policy, "backoff_max must not be shorter than backoff_base",
                    "backoff_base was " + std::to_string(p.backoff.base_ms) + " ms, backoff_max " +
                        std::to_string(p.backoff.cap_ms) + " ms.");
}

NackDecision decide_nack(const RetryPolicy& policy, int attempt,
                         std::optional<int64_t> retry_after_ms, double uniform01) {
    NackDecision d;
    if (attempt >= policy.max_attempts) {
        d.dead = true;
        return d;
    }
    if (retry_after_ms) {
        d.delay_ms = *retry_after_ms < 0 ? 0 : *retry_after_ms;
    } else {
        d.delay_ms = backoff_delay_ms(policy.backoff, attempt, uniform01);
    }
    return d;
}

void validate_batch(int64_t batch) {
    if (batch < 1 || batch > kMaxClaimBatch)
        throw Error(ErrorCode::invalid_batch,
                    "batch must be between 1 and " + std::to_string(kMaxClaimBatch),
                    "batch was " + std::to_string(batch) + ".",
                    "Claim again for more messages.");
}

void validate_relay(std::string_view relay) {
    validate_name(ErrorCode::invalid_relay, "relay name", relay);
}

void validate_message_key(std::string_view key) {
    validate_name(ErrorCode::invalid_message_key, "message key", key);
}

Uuid uuid_v7_floor(uint64_t unix_ms) {
    Uuid id{};
    for (int i = 0; i < 6; ++i) id[i] = static_cast<uint8_t>(unix_ms >> (8 * (5 - i)));
    id[6] = 0x70;
    id[8] = 0x80;
    return id;
}

Uuid uuid_v7_at(uint64_t unix_ms, const std::array<uint8_t, 10>& random) {
    Uuid id = uuid_v7_floor(unix_ms);
    id[6] = static_cast<uint8_t>(0x70 | (random[0] & 0x0F));
    id[7] = random[1];
    id[8] = static_cast<uint8_t>(0x80 | (random[2] & 0x3F));
    for (int i = 9; i < 16; ++i) id[i] = random[i - 6];
    return id;
}

Uuid uuid_v7_successor(const Uuid& id) {
    Uuid next = id;
    // rand_b: the low 6 bits of byte 8 and bytes 9..15 (62 bits).
    for (int i = 15; i >= 9; --i)
        if (++next[i] != 0) return next;
    if ((next[8] & 0x3F) != 0x3F) {
        next[8] = static_cast<uint8_t>((next[8] & 0xC0) | ((next[8] & 0x3F) + 1));
        return next;
    }
    next[8] = 0x80;
    // the 12-bit counter: low 4 bits of byte 6 and byte 7
    if (++next[7] != 0) return next;
    if ((next[6] & 0x0F) != 0x0F) {
        next[6] = static_cast<uint8_t>(0x70 | ((next[6] & 0x0F) + 1));
        return next;
    }
    next[6] = 0x70;
    for (int i = 5; i >= 0; --i)
        if (++next[i] != 0) break;
    return next;
}

std::vector<Uuid> key_seqs_after(const std::optional<Uuid>& last, const std::vector<Uuid>& provisional) {
    std::vector<Uuid> result;
    result.reserve(provisional.size());
    std::optional<Uuid> previous = last;
    for (const Uuid& seq : provisional) {
        Uuid next = !previous || *previous < seq ? seq : uuid_v7_successor(*previous);
        result.push_back(next);
        previous = next;
    }
    return result;
}

Uuid waiting_position() {
    Uuid all_ones;
    all_ones.fill(0xff);
    return all_ones;
}

std::vector<bool> settled_waiting(bool key_has_others, std::vector<bool> guessed) {
    if (!key_has_others && !guessed.empty()) guessed[0] = false;
    return guessed;
}

}  // namespace once
