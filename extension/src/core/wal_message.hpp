// The wire format of one outbox message carried in the WAL (the WAL transport, docs/design.md
// "WAL transport"): the content of a transactional logical decoding message with
// prefix "pg_once". once.send encodes it (extension), once-relay decodes it from the pgoutput
// stream (daemon/relay/wal). Both sides link this file, so there is one definition of the format.
//
// Layout, all integers big-endian:
//   u8   format version: 1 for a message without a key, 2 for a keyed one, 3 for one with
//        optional fields (keyed or not)
//   16   message id (uuid bytes)
//   i64  created_at, microseconds since the Unix epoch
//   u16  topic length, then the topic bytes
//   u16  key length, then the key bytes; 0xFFFF = no key (a key is at most 0xFFFE bytes)
//   versions 2 and 3 with a key: u32 key_owner (the role's oid), 16 key_seq (uuid bytes): the key's order
//        stamp, drawn at commit under the key's lock (extension/src/pg/outbox/outbox_key_order.hpp)
//   u32  headers length, then the headers' JSON text; 0xFFFFFFFF = no headers
//   u32  payload length, then the payload's JSON text
//   version 3 only: u8 the number of optional fields, then each (once, in any order): u8
//        field id, u32 length, then that many bytes (kWalOptionalField* below). (The count
//        makes a message cut at a field's end malformed, as every cut is in versions 1 and 2.) A reader
//        skips the ids it does not know, so a new optional field is a new id, not a new format
//        version; a field the reader must understand to deliver the message correctly still
//        needs one.
//   16   tag: the first 16 bytes of HMAC-SHA256(key, origin || every byte before the tag)
// The origin (wal_message_origin_bytes) is not in the content: it is where the message was
// emitted, 16 bytes that a reader of the stream knows without trusting the content: the
// cluster's system identifier (u64), the database's oid (u32) and the 32-bit id of the
// emitting top-level transaction (u32; pgoutput's Begin carries it). So the bytes of a genuine
// message, read from a slot, an archive or a backup and emitted again by another transaction
// (pg_logical_emit_message), do not verify there: a replay is never published. (The xid is
// the 32 bits the stream carries: the same bytes would verify again only in the transaction
// that gets the same 32-bit xid, 2^32 transactions later.) The binding came with the format's
// first release (0.3), so versions 1 and 2 always had it and no relay reads them without it.
// Nothing follows the tag, in every format version (later ones keep the tag last, over the
// origin and the bytes before it, so that an older relay can verify what it cannot read). A
// decoder meets this content in a stream it does not control (any role that may call
// pg_logical_emit_message can write a "pg_once" message), so decoding checks every length
// against the bytes present and never reads past them, and a reader
// publishes a message only when its tag verifies with the database's key (once.wal_secret(),
// readable by the extension's owner and once_relay): a message that anyone else emitted has
// no valid tag. This file keeps the format pure: the HMAC itself is computed by the caller
// (the extension with PostgreSQL's common/hmac.h, the relay with OpenSSL), which passes the
// tag in (append_wal_message_tag) and gets it out (decode_wal_message) here.
#pragma once

#include "core/uuid_v7.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace once {

// The logical decoding message prefix that marks pg_once's messages in the WAL.
inline constexpr std::string_view kWalMessagePrefix = "pg_once";
// Version 1 carries no key order (unkeyed messages); version 2 adds key_owner and key_seq after
// the key. The encoder writes 1 without a key and 2 with one, so an unkeyed message is the
// same bytes as before version 2; the decoder reads both.
inline constexpr uint8_t kWalMessageVersion = 1;
inline constexpr uint8_t kWalMessageKeyedVersion = 2;
// Version 3: versions 1/2's fields, then optional fields. The encoder writes it only for a
// message with an optional field, so a message without one is the bytes versions 1 and 2 were
// (a relay that reads only those keeps reading them).
inline constexpr uint8_t kWalMessageOptionalFieldsVersion = 3;

// The ids of version 3's optional fields.
inline constexpr uint8_t kWalOptionalFieldContentType = 1;  // the payload's media type (once.send's content_type)

// The key of the tag (once.wal_secret, 32 random bytes per database) and the tag: HMAC-SHA256
// truncated to its first 16 bytes (128 bits, RFC 2104 section 5 allows truncation to half).
inline constexpr size_t kWalSecretSize = 32;
inline constexpr size_t kWalMessageTagSize = 16;
using WalMessageTag = std::array<uint8_t, kWalMessageTagSize>;

// Where a message was emitted: what its tag binds it to besides its bytes (see the layout).
struct WalMessageOrigin {
    uint64_t system_identifier = 0;  // pg_control_system(), IDENTIFY_SYSTEM's systemid
    uint32_t database_oid = 0;
    uint32_t xid = 0;                // the emitting top-level transaction's (32-bit) id
};
inline constexpr size_t kWalMessageOriginSize = 16;

// The origin as the HMAC reads it ahead of the message: big-endian system identifier,
// database oid, xid.
std::string wal_message_origin_bytes(const WalMessageOrigin& origin);

// The largest content (tag included) once.send emits: a longer one is refused by once.send
// (ON202) and skipped by the relay from its declared length, before it is copied or its tag
// computed. Topic and key are at most 255 bytes each, so this bounds the payload and headers'
// JSON text, which once.max_payload_bytes bounds only in jsonb bytes (the text of a string of
// control characters is up to six times longer).
inline constexpr size_t kWalMessageMaxContentBytes = 32u * 1024 * 1024;

struct WalMessage {
    Uuid id{};
    int64_t created_at_us = 0;           // microseconds since 1970-01-01 UTC
    std::string topic;
    std::optional<std::string> key;      // the ordering key, if any
    uint32_t key_owner = 0;              // with a key: the sending role's oid (0 from version 1)
    Uuid key_seq{};                      // with a key: its order stamp (nil from version 1)
    std::optional<std::string> headers;  // JSON object text, if any
    std::string payload;                 // JSON text
    // optional fields (version 3):
    std::optional<std::string> content_type;  // media type; none: application/json

    bool operator==(const WalMessage& other) const;
};

// A decoded message with the tag it carried (not yet verified: see verify_wal_message_tag). It
// is a WalMessage, so code that only reads the fields takes it as one; whoever publishes it
// must verify the tag first.
struct DecodedWalMessage : WalMessage {
    WalMessageTag tag{};
};

// Content that is not a well-formed pg_once message of versions 1 to 3: truncated, with bytes
// after the tag, a length that points past the end, an optional field given twice, or another
// format version.
class WalMessageFormatError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Content of a format version this code does not read: a newer extension's. Every version ends
// with the tag over its origin and the bytes before it, as versions 1 to 3 do, so a reader can
// tell a newer extension's message (its tag verifies) from one that anybody emitted (it does
// not).
class WalMessageVersionError : public WalMessageFormatError {
public:
    WalMessageVersionError(const std::string& what, uint8_t version) : WalMessageFormatError(what), version_(version) {}
    uint8_t version() const { return version_; }

private:
    uint8_t version_;
};

// The bytes the tag covers: the content of the logical message without its tag. Throws
// std::length_error when a field does not fit its length prefix (a topic over 65535 bytes, a
// key over 65534, JSON or an optional field over 4 GiB - 2); once.send validates topic and key far below those
// limits, so that is a bug, not a user error.
std::string encode_wal_message(const WalMessage& message);

// Completes the content: appends the tag computed over `encoded` (what encode_wal_message
// returned).
void append_wal_message_tag(std::string& encoded, const WalMessageTag& tag);

// The tag of a full HMAC-SHA256 (32 bytes): its first kWalMessageTagSize bytes. Throws
// std::length_error for a shorter MAC.
WalMessageTag wal_message_tag(const uint8_t* hmac_sha256, size_t size);

// The bytes a message's tag covers: `content` without its last kWalMessageTagSize bytes.
// Throws WalMessageFormatError when content is shorter than a tag.
std::string_view wal_message_tagged_bytes(std::string_view content);

// Decodes the content of a "pg_once" logical message and splits off its tag; throws
// WalMessageFormatError. Does not verify the tag (it needs the key and an HMAC).
DecodedWalMessage decode_wal_message(std::string_view content);

// Whether a tag a message carried equals the one computed for it, in time that does not
// depend on where they differ (an early-exit compare would let a forger learn a valid tag
// byte by byte from the reader's timing).
bool wal_message_tags_equal(const WalMessageTag& carried, const WalMessageTag& computed);

}  // namespace once
