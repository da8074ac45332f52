// Authenticity of the WAL transport's messages. Any role may call pg_logical_emit_message, so
// anyone could write a "pg_once" message into the stream; the extension therefore appends a
// tag to each one it emits, and the relay publishes only messages whose tag verifies.
//
// Contract with the extension: the content of a "pg_once" logical message is the encoded
// message (core/wal_message.hpp) followed by kWalTagSize bytes = the first kWalTagSize bytes of
// HMAC-SHA256(key, every byte before the tag). The 32-byte key is read by the relay at connect
// with SELECT once.wal_secret() (readable by once_relay only).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct evp_mac_ctx_st;

namespace once::relay::wal {

inline constexpr size_t kWalTagSize = 16;
inline constexpr size_t kWalKeySize = 32;

class WalMessageTag {
public:
    // Throws std::invalid_argument unless `key` is kWalKeySize bytes.
    explicit WalMessageTag(std::string key);
    WalMessageTag(const WalMessageTag& other);
    WalMessageTag& operator=(const WalMessageTag& other);
    WalMessageTag(WalMessageTag&&) noexcept = default;
    WalMessageTag& operator=(WalMessageTag&&) noexcept = default;
    ~WalMessageTag();

    // The tag of `body` (kWalTagSize bytes).
    std::string tag(std::string_view body) const;

    // `body` followed by its tag: what the extension emits (and the tests produce).
    std::string sign(std::string_view body) const;

    // The body of `content` when its last kWalTagSize bytes are the body's tag (compared in
    // constant time); nullopt when too short or the tag does not match.
    std::optional<std::string_view> verify(std::string_view content) const;

private:
    struct FreeMac {
        void operator()(evp_mac_ctx_st* c) const;
    };
    // An HMAC-SHA256 context keyed once: each tag re-initialises it with the same key. The
    // one-shot HMAC() looks the digest up, allocates and keys a context for every call, which
    // was a third of the relay's CPU while it drained a backlog (perf, 100k messages).
    // (mutable: tag() is logically const; the relay decodes on one thread.)
    std::unique_ptr<evp_mac_ctx_st, FreeMac> keyed_;
};

}  // namespace once::relay::wal
