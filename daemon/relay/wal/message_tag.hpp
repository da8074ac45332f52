// Authenticity of the WAL transport's messages. Any role may call pg_logical_emit_message, so
// anyone could write a "pg_once" message into the stream; the extension therefore appends a
// tag to each one it emits, and the relay publishes only messages whose tag verifies.
//
// Contract with the extension: the content of a "pg_once" logical message is the encoded
// message (core/wal_message.hpp) followed by kWalTagSize bytes = the first kWalTagSize bytes of
// HMAC-SHA256(key, origin || every byte before the tag), where the origin is the cluster's
// system identifier, the database's oid and the emitting transaction's xid
// (once::wal_message_origin_bytes): the relay takes them from the stream (IDENTIFY_SYSTEM, the
// replication connection's database, the transaction's Begin), so a message's bytes emitted
// again by another transaction do not verify. The 32-byte key is read by the relay at connect
// with SELECT once.wal_secret() (readable by once_relay only).
#pragma once

#include "core/wal_message.hpp"

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

    // The tag of `body` emitted at `origin` (kWalTagSize bytes).
    std::string tag(const once::WalMessageOrigin& origin, std::string_view body) const;

    // `body` followed by its tag: what the extension emits at `origin` (and the tests produce).
    std::string sign(const once::WalMessageOrigin& origin, std::string_view body) const;

    // The body of `content` when its last kWalTagSize bytes are the body's tag at `origin`
    // (compared in constant time); nullopt when too short or the tag does not match.
    std::optional<std::string_view> verify(const once::WalMessageOrigin& origin, std::string_view content) const;

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
