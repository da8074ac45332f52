#include "wal/message_tag.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace once::relay::wal {

WalMessageTag::WalMessageTag(std::string key) : key_(std::move(key)) {
    if (key_.size() != kWalKeySize)
        throw std::invalid_argument("the WAL message key must be " + std::to_string(kWalKeySize) + " bytes, not " +
                                    std::to_string(key_.size()));
}

std::string WalMessageTag::tag(std::string_view body) const {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()), reinterpret_cast<const unsigned char*>(body.data()),
              body.size(), mac, &len) ||
        len < kWalTagSize)
        throw std::runtime_error("HMAC-SHA256 failed");
    return std::string(reinterpret_cast<const char*>(mac), kWalTagSize);
}

std::string WalMessageTag::sign(std::string_view body) const {
    std::string out(body);
    out += tag(body);
    return out;
}

std::optional<std::string_view> WalMessageTag::verify(std::string_view content) const {
    if (content.size() < kWalTagSize) return std::nullopt;
    std::string_view body = content.substr(0, content.size() - kWalTagSize);
    std::string expected = tag(body);
    if (CRYPTO_memcmp(expected.data(), content.data() + body.size(), kWalTagSize) != 0) return std::nullopt;
    return body;
}

}  // namespace once::relay::wal
