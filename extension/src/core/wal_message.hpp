// The wire format of one outbox message carried in the WAL (the WAL transport, docs/design.md
// "WAL transport (in progress)"): the content of a transactional logical decoding message with
// prefix "pg_once". once.send encodes it (extension), once-relay decodes it from the pgoutput
// stream (daemon/src/wal). Both sides link this file, so there is one definition of the format.
//
// Layout, all integers big-endian:
//   u8   format version (kWalMessageVersion)
//   16   message id (uuid bytes)
//   i64  created_at, microseconds since the Unix epoch
//   u16  topic length, then the topic bytes
//   u16  key length, then the key bytes; 0xFFFF = no key (a key is at most 0xFFFE bytes)
//   u32  headers length, then the headers' JSON text; 0xFFFFFFFF = no headers
//   u32  payload length, then the payload's JSON text
// Nothing follows the payload. A decoder meets this content in a stream it does not control
// (any role that may call pg_logical_emit_message can write a "pg_once" message), so decoding
// checks every length against the bytes present and never reads past them.
#pragma once

#include "core/uuid_v7.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace once {

// The logical decoding message prefix that marks pg_once's messages in the WAL.
inline constexpr std::string_view kWalMessagePrefix = "pg_once";
inline constexpr uint8_t kWalMessageVersion = 1;

struct WalMessage {
    Uuid id{};
    int64_t created_at_us = 0;           // microseconds since 1970-01-01 UTC
    std::string topic;
    std::optional<std::string> key;      // the ordering key, if any
    std::optional<std::string> headers;  // JSON object text, if any
    std::string payload;                 // JSON text

    bool operator==(const WalMessage& other) const;
};

// Content that is not a well-formed version-1 pg_once message: truncated, with bytes after the
// payload, a length that points past the end, or another format version.
class WalMessageFormatError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The content bytes of the logical message. Throws std::length_error when a field does not fit
// its length prefix (a topic over 65535 bytes, a key over 65534, JSON over 4 GiB - 2); once.send
// validates topic and key far below those limits, so that is a bug, not a user error.
std::string encode_wal_message(const WalMessage& message);

// Decodes the content of a "pg_once" logical message; throws WalMessageFormatError.
WalMessage decode_wal_message(std::string_view content);

}  // namespace once
