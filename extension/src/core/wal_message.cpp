#include "core/wal_message.hpp"

#include <cstring>

namespace once {

namespace {

constexpr uint16_t kNoKey = 0xFFFF;
constexpr uint32_t kNoHeaders = 0xFFFFFFFF;

void put_u16(std::string& out, uint16_t v) {
    out.push_back(static_cast<char>(v >> 8));
    out.push_back(static_cast<char>(v & 0xFF));
}

void put_u32(std::string& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xFF));
}

void put_u64(std::string& out, uint64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xFF));
}

// Reads fields front to back; every read first checks that the bytes are there.
class Reader {
public:
    explicit Reader(std::string_view in) : in_(in) {}

    uint64_t uint(size_t bytes, const char* field) {
        need(bytes, field);
        uint64_t v = 0;
        for (size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(in_[pos_ + i]);
        pos_ += bytes;
        return v;
    }

    std::string_view bytes(size_t n, const char* field) {
        need(n, field);
        std::string_view v = in_.substr(pos_, n);
        pos_ += n;
        return v;
    }

    bool at_end() const { return pos_ == in_.size(); }
    size_t position() const { return pos_; }

private:
    void need(size_t n, const char* field) const {
        if (n > in_.size() - pos_) {
            throw WalMessageFormatError("pg_once WAL message truncated: " + std::string(field) + " needs " +
                                        std::to_string(n) + " bytes at offset " + std::to_string(pos_) + ", " +
                                        std::to_string(in_.size() - pos_) + " left");
        }
    }

    std::string_view in_;
    size_t pos_ = 0;
};

}  // namespace

bool WalMessage::operator==(const WalMessage& o) const {
    return id == o.id && created_at_us == o.created_at_us && topic == o.topic && key == o.key &&
           (!key || (key_owner == o.key_owner && key_seq == o.key_seq)) && headers == o.headers && payload == o.payload &&
           content_type == o.content_type;
}

std::string encode_wal_message(const WalMessage& m) {
    if (m.topic.size() > 0xFFFF) throw std::length_error("pg_once WAL message: topic longer than 65535 bytes");
    if (m.key && m.key->size() >= kNoKey) throw std::length_error("pg_once WAL message: key longer than 65534 bytes");
    if (m.headers && m.headers->size() >= kNoHeaders)
        throw std::length_error("pg_once WAL message: headers longer than 4294967294 bytes");
    if (m.payload.size() > 0xFFFFFFFFu) throw std::length_error("pg_once WAL message: payload longer than 4294967295 bytes");
    if (m.content_type && m.content_type->size() >= 0xFFFFFFFFu)
        throw std::length_error("pg_once WAL message: content_type longer than 4294967294 bytes");
    const bool optional_fields = m.content_type.has_value();

    std::string out;
    out.reserve(1 + 16 + 8 + 2 + m.topic.size() + 2 + (m.key ? m.key->size() : 0) + 4 +
                (m.headers ? m.headers->size() : 0) + 4 + m.payload.size());
    out.push_back(static_cast<char>(optional_fields ? kWalMessageOptionalFieldsVersion
                                    : m.key       ? kWalMessageKeyedVersion
                                                  : kWalMessageVersion));
    out.append(reinterpret_cast<const char*>(m.id.data()), m.id.size());
    put_u64(out, static_cast<uint64_t>(m.created_at_us));
    put_u16(out, static_cast<uint16_t>(m.topic.size()));
    out += m.topic;
    if (m.key) {
        put_u16(out, static_cast<uint16_t>(m.key->size()));
        out += *m.key;
        put_u32(out, m.key_owner);
        out.append(reinterpret_cast<const char*>(m.key_seq.data()), m.key_seq.size());
    } else {
        put_u16(out, kNoKey);
    }
    if (m.headers) {
        put_u32(out, static_cast<uint32_t>(m.headers->size()));
        out += *m.headers;
    } else {
        put_u32(out, kNoHeaders);
    }
    put_u32(out, static_cast<uint32_t>(m.payload.size()));
    out += m.payload;
    if (optional_fields) out.push_back(static_cast<char>(m.content_type ? 1 : 0));  // (the count)
    if (m.content_type) {
        out.push_back(static_cast<char>(kWalOptionalFieldContentType));
        put_u32(out, static_cast<uint32_t>(m.content_type->size()));
        out += *m.content_type;
    }
    return out;
}

std::string wal_message_origin_bytes(const WalMessageOrigin& origin) {
    std::string out;
    out.reserve(kWalMessageOriginSize);
    put_u64(out, origin.system_identifier);
    put_u32(out, origin.database_oid);
    put_u32(out, origin.xid);
    return out;
}

void append_wal_message_tag(std::string& encoded, const WalMessageTag& tag) {
    encoded.append(reinterpret_cast<const char*>(tag.data()), tag.size());
}

WalMessageTag wal_message_tag(const uint8_t* hmac_sha256, size_t size) {
    if (size < kWalMessageTagSize) throw std::length_error("pg_once WAL message: a MAC shorter than the tag");
    WalMessageTag tag;
    std::memcpy(tag.data(), hmac_sha256, tag.size());
    return tag;
}

std::string_view wal_message_tagged_bytes(std::string_view content) {
    if (content.size() < kWalMessageTagSize) {
        throw WalMessageFormatError("pg_once WAL message truncated: " + std::to_string(content.size()) +
                                    " bytes, fewer than its " + std::to_string(kWalMessageTagSize) + "-byte tag");
    }
    return content.substr(0, content.size() - kWalMessageTagSize);
}

bool wal_message_tags_equal(const WalMessageTag& carried, const WalMessageTag& computed) {
    // Every byte is compared whatever the earlier ones were; volatile keeps the compiler from
    // turning the loop back into an early exit.
    volatile uint8_t difference = 0;
    for (size_t i = 0; i < carried.size(); ++i) difference = difference | (carried[i] ^ computed[i]);
    return difference == 0;
}

DecodedWalMessage decode_wal_message(std::string_view content) {
    // The version first: another version may place or size its tag differently.
    auto version = static_cast<uint8_t>(Reader(content).uint(1, "the format version"));
    if (version != kWalMessageVersion && version != kWalMessageKeyedVersion &&
        version != kWalMessageOptionalFieldsVersion) {
        throw WalMessageVersionError("pg_once WAL message has format version " + std::to_string(version) +
                                         ", this relay reads versions " + std::to_string(kWalMessageVersion) + " to " +
                                         std::to_string(kWalMessageOptionalFieldsVersion),
                                     version);
    }
    std::string_view body = wal_message_tagged_bytes(content);
    DecodedWalMessage m;
    std::memcpy(m.tag.data(), content.data() + body.size(), m.tag.size());
    Reader r(body);
    r.uint(1, "the format version");
    std::string_view id = r.bytes(m.id.size(), "the id");
    std::memcpy(m.id.data(), id.data(), m.id.size());
    m.created_at_us = static_cast<int64_t>(r.uint(8, "created_at"));
    auto topic_len = static_cast<size_t>(r.uint(2, "the topic length"));
    m.topic = std::string(r.bytes(topic_len, "the topic"));
    auto key_len = static_cast<uint16_t>(r.uint(2, "the key length"));
    if (key_len != kNoKey) m.key = std::string(r.bytes(key_len, "the key"));
    if (version == kWalMessageKeyedVersion && !m.key) {
        // (a version-2 message without a key is malformed: the encoder never writes one)
        throw WalMessageFormatError("pg_once WAL message of version 2 has no key");
    }
    if (version != kWalMessageVersion && m.key) {
        m.key_owner = static_cast<uint32_t>(r.uint(4, "the key owner"));
        std::string_view seq = r.bytes(m.key_seq.size(), "the key_seq");
        std::memcpy(m.key_seq.data(), seq.data(), m.key_seq.size());
    }
    auto headers_len = static_cast<uint32_t>(r.uint(4, "the headers length"));
    if (headers_len != kNoHeaders) m.headers = std::string(r.bytes(headers_len, "the headers"));
    auto payload_len = static_cast<uint32_t>(r.uint(4, "the payload length"));
    m.payload = std::string(r.bytes(payload_len, "the payload"));
    if (version == kWalMessageOptionalFieldsVersion) {
        bool seen[256] = {};
        auto count = static_cast<uint8_t>(r.uint(1, "the number of optional fields"));
        for (uint8_t i = 0; i < count; ++i) {
            auto field = static_cast<uint8_t>(r.uint(1, "an optional field's id"));
            auto len = static_cast<uint32_t>(r.uint(4, "an optional field's length"));
            std::string_view value = r.bytes(len, "an optional field");
            if (seen[field])
                throw WalMessageFormatError("pg_once WAL message has optional field " + std::to_string(field) +
                                            " twice");
            seen[field] = true;
            if (field == kWalOptionalFieldContentType) m.content_type = std::string(value);
            // (another id: a newer extension's field this reader does without)
        }
    }
    if (!r.at_end()) {
        throw WalMessageFormatError("pg_once WAL message has " + std::to_string(body.size() - r.position()) +
                                    " bytes between the payload and the tag");
    }
    return m;
}

}  // namespace once
