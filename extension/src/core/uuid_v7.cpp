#include "uuid_v7.hpp"

#include <algorithm>

namespace once {

Uuid UuidV7Generator::next(uint64_t unix_ms, const std::array<uint8_t, 10>& random) {
    if (unix_ms > last_ms_) {
        last_ms_ = unix_ms;
        // Start the counter at a random value below 2^11 so that a burst in one millisecond
        // has at least 2048 steps before the timestamp must be carried forward.
        counter_ = static_cast<uint16_t>(((random[0] << 8) | random[1]) & 0x07FF);
    } else if (counter_ >= 0x0FFF) {
        ++last_ms_;  // counter exhausted (or clock went back): borrow the next millisecond
        counter_ = 0;
    } else {
        ++counter_;
    }

    Uuid id{};
    for (int i = 0; i < 6; ++i) id[i] = static_cast<uint8_t>(last_ms_ >> (8 * (5 - i)));
    id[6] = static_cast<uint8_t>(0x70 | ((counter_ >> 8) & 0x0F));
    id[7] = static_cast<uint8_t>(counter_ & 0xFF);
    id[8] = static_cast<uint8_t>(0x80 | (random[2] & 0x3F));
    for (int i = 9; i < 16; ++i) id[i] = random[i - 6];
    return id;
}

uint64_t uuid_v7_unix_ms(const Uuid& id) {
    uint64_t ms = 0;
    for (int i = 0; i < 6; ++i) ms = (ms << 8) | id[i];
    return ms;
}

std::string uuid_to_string(const Uuid& id) {
    static const char* hex = "0123456789abcdef";
    std::string s;
    s.reserve(36);
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
        s += hex[id[i] >> 4];
        s += hex[id[i] & 0xF];
    }
    return s;
}

Uuid uuid_v8_from_hash(const uint8_t* hash16) {
    Uuid id;
    std::copy(hash16, hash16 + 16, id.begin());
    id[6] = static_cast<uint8_t>((id[6] & 0x0f) | 0x80);  // version 8
    id[8] = static_cast<uint8_t>((id[8] & 0x3f) | 0x80);  // variant 10
    return id;
}

std::string role_scoped_id_input(std::string_view role, const Uuid& chosen) {
    std::string in("pg_once message_id v1");
    in.push_back('\0');
    in.append(role);
    in.push_back('\0');
    in.append(reinterpret_cast<const char*>(chosen.data()), chosen.size());
    return in;
}

}  // namespace once
