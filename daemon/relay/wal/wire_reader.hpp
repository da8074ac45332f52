// Reads the big-endian integers and strings of the replication protocol front to back. Every
// read first checks that its bytes are there and throws ProtocolError naming the field if not,
// so a truncated frame never leads to a read past its end.
#pragma once

#include "wal/protocol_error.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace once::relay::wal {

class WireReader {
public:
    WireReader(std::string_view in, const char* what) : in_(in), what_(what) {}

    uint8_t u8(const char* field) { return static_cast<uint8_t>(uint(1, field)); }
    uint32_t u32(const char* field) { return static_cast<uint32_t>(uint(4, field)); }
    uint64_t u64(const char* field) { return uint(8, field); }
    int64_t i64(const char* field) { return static_cast<int64_t>(uint(8, field)); }

    std::string_view bytes(size_t n, const char* field) {
        need(n, field);
        std::string_view v = in_.substr(pos_, n);
        pos_ += n;
        return v;
    }

    // A NUL-terminated string (the protocol's "String"); the NUL must be inside the frame.
    std::string_view c_string(const char* field) {
        size_t nul = in_.find('\0', pos_);
        if (nul == std::string_view::npos) fail(std::string(field) + " has no terminating NUL");
        std::string_view v = in_.substr(pos_, nul - pos_);
        pos_ = nul + 1;
        return v;
    }

    std::string_view rest() {
        std::string_view v = in_.substr(pos_);
        pos_ = in_.size();
        return v;
    }

    [[noreturn]] void fail(const std::string& why) const {
        throw ProtocolError(std::string(what_) + ": " + why);
    }

private:
    uint64_t uint(size_t n, const char* field) {
        need(n, field);
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(in_[pos_ + i]);
        pos_ += n;
        return v;
    }

    void need(size_t n, const char* field) const {
        if (n > in_.size() - pos_) {
            fail("truncated: " + std::string(field) + " needs " + std::to_string(n) + " bytes at offset " +
                 std::to_string(pos_) + ", " + std::to_string(in_.size() - pos_) + " left");
        }
    }

    std::string_view in_;
    const char* what_;
    size_t pos_ = 0;
};

}  // namespace once::relay::wal
