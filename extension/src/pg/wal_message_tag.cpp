// The WAL messages' tag; why: wal_message_tag.hpp.
#include "wal_message_tag.hpp"

#include "../core/error.hpp"
#include "guard.hpp"
#include "spi.hpp"

extern "C" {
#include "common/hmac.h"
}

#include <array>
#include <cstring>
#include <string>

namespace once::pg {
namespace {

SavedPlan secret_plan("SELECT s.secret FROM once.wal_secret s", std::initializer_list<Oid>{});

std::array<uint8, kWalSecretSize> secret;
bool secret_loaded = false;

const std::array<uint8, kWalSecretSize>& database_secret() {
    if (secret_loaded) return secret;
    AsExtensionOwner owner;
    const uint64 rows = secret_plan.execute(nullptr, nullptr, 2);
    Datum value;
    if (rows != 1 || !spi_value(0, 1, &value))
        throw Error(ErrorCode::internal, "once.wal_secret holds " + std::to_string(rows) + " keys, not one",
                    "The WAL transport signs every message with that table's key.",
                    "Recreate the extension, or insert a key of 32 random bytes as its owner.");
    bytea* key = pg_call([&] { return DatumGetByteaPP(value); });
    if (VARSIZE_ANY_EXHDR(key) != kWalSecretSize)
        throw Error(ErrorCode::internal, "once.wal_secret's key is not " + std::to_string(kWalSecretSize) + " bytes");
    std::memcpy(secret.data(), VARDATA_ANY(key), kWalSecretSize);
    secret_loaded = true;
    return secret;
}

}  // namespace

WalMessageTag wal_message_hmac_tag(std::string_view tagged_bytes) {
    const auto& key = database_secret();
    std::array<uint8, 32> mac{};  // SHA-256's output
    pg_call([&] {
        pg_hmac_ctx* ctx = pg_hmac_create(PG_SHA256);
        if (ctx == nullptr) elog(ERROR, "out of memory creating an HMAC context");
        if (pg_hmac_init(ctx, key.data(), key.size()) < 0 ||
            pg_hmac_update(ctx, reinterpret_cast<const uint8*>(tagged_bytes.data()), tagged_bytes.size()) < 0 ||
            pg_hmac_final(ctx, mac.data(), mac.size()) < 0) {
            const char* why = pg_hmac_error(ctx);
            pg_hmac_free(ctx);
            elog(ERROR, "could not compute the HMAC of a pg_once WAL message: %s", why);
        }
        pg_hmac_free(ctx);
    });
    return wal_message_tag(mac.data(), mac.size());
}

}  // namespace once::pg
