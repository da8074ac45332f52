#include "wal/message_tag.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <stdexcept>

namespace once::relay::wal {

void WalMessageTag::FreeMac::operator()(evp_mac_ctx_st* c) const { EVP_MAC_CTX_free(c); }

WalMessageTag::WalMessageTag(std::string key) {
    if (key.size() != kWalKeySize)
        throw std::invalid_argument("the WAL message key must be " + std::to_string(kWalKeySize) + " bytes, not " +
                                    std::to_string(key.size()));
    EVP_MAC* hmac = EVP_MAC_fetch(nullptr, OSSL_MAC_NAME_HMAC, nullptr);
    if (!hmac) throw std::runtime_error("HMAC is not available from OpenSSL");
    keyed_.reset(EVP_MAC_CTX_new(hmac));
    EVP_MAC_free(hmac);
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_construct_end()};
    bool keyed = keyed_ && EVP_MAC_init(keyed_.get(), reinterpret_cast<const unsigned char*>(key.data()), key.size(), params);
    OPENSSL_cleanse(key.data(), key.size());
    if (!keyed) throw std::runtime_error("HMAC-SHA256: cannot set the key");
}

WalMessageTag::WalMessageTag(const WalMessageTag& other) : keyed_(EVP_MAC_CTX_dup(other.keyed_.get())) {
    if (!keyed_) throw std::runtime_error("HMAC-SHA256: cannot copy the keyed context");
}

WalMessageTag& WalMessageTag::operator=(const WalMessageTag& other) {
    if (this != &other) *this = WalMessageTag(other);
    return *this;
}

WalMessageTag::~WalMessageTag() = default;

std::string WalMessageTag::tag(const once::WalMessageOrigin& origin, std::string_view body) const {
    unsigned char mac[EVP_MAX_MD_SIZE];
    size_t len = 0;
    const std::string origin_bytes = once::wal_message_origin_bytes(origin);
    // A null key: the same key again (the context keeps it), without looking the digest up.
    if (!EVP_MAC_init(keyed_.get(), nullptr, 0, nullptr) ||
        !EVP_MAC_update(keyed_.get(), reinterpret_cast<const unsigned char*>(origin_bytes.data()), origin_bytes.size()) ||
        !EVP_MAC_update(keyed_.get(), reinterpret_cast<const unsigned char*>(body.data()), body.size()) ||
        !EVP_MAC_final(keyed_.get(), mac, &len, sizeof mac) || len < kWalTagSize)
        throw std::runtime_error("HMAC-SHA256 failed");
    return std::string(reinterpret_cast<const char*>(mac), kWalTagSize);
}

std::string WalMessageTag::sign(const once::WalMessageOrigin& origin, std::string_view body) const {
    std::string out(body);
    out += tag(origin, body);
    return out;
}

std::optional<std::string_view> WalMessageTag::verify(const once::WalMessageOrigin& origin, std::string_view content) const {
    if (content.size() < kWalTagSize) return std::nullopt;
    std::string_view body = content.substr(0, content.size() - kWalTagSize);
    std::string expected = tag(origin, body);
    if (CRYPTO_memcmp(expected.data(), content.data() + body.size(), kWalTagSize) != 0) return std::nullopt;
    return body;
}

}  // namespace once::relay::wal
