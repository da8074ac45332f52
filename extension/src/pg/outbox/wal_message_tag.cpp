// The WAL messages' tag; why: wal_message_tag.hpp.
#include "pg/outbox/wal_message_tag.hpp"

#include "core/error.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/spi.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "common/hmac.h"
#include "miscadmin.h"
#include "utils/resowner.h"
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

// One HMAC context for the backend's life (with keyless_reinit_ok below, a context created and
// keyed per message doubled the cost of a WAL send: docs/design.md). With OpenSSL, PostgreSQL
// ties a context to CurrentResourceOwner and frees it when that owner is released (at the end
// of the transaction); this one belongs to a resource owner of its own that is never
// released, so it lives as long as the backend.
pg_hmac_ctx* backend_hmac_context() {
    static pg_hmac_ctx* context = nullptr;
    if (context != nullptr) return context;
    static ResourceOwner owner = nullptr;
    struct RestoreOwner {  // (a plain assignment: safe in a destructor)
        ResourceOwner saved = CurrentResourceOwner;
        ~RestoreOwner() { CurrentResourceOwner = saved; }
    } restore;
    pg_call([&] {
        if (owner == nullptr) owner = ResourceOwnerCreate(nullptr, "pg_once WAL message tags");
        CurrentResourceOwner = owner;
        context = pg_hmac_create(PG_SHA256);
        if (context == nullptr) elog(ERROR, "out of memory creating an HMAC context");
    });
    return context;
}

}  // namespace

namespace {

// HMAC-SHA256 of `prefix` then `bytes` into `mac`; `key` nullptr re-uses the key the context
// was last initialised with, which only OpenSSL's implementation does (see keyed_context).
void hmac(pg_hmac_ctx* ctx, const std::array<uint8, kWalSecretSize>* key, std::string_view prefix,
          std::string_view bytes, std::array<uint8, 32>& mac) {
    pg_call([&] {
        if (pg_hmac_init(ctx, key ? key->data() : nullptr, key ? key->size() : 0) < 0 ||
            pg_hmac_update(ctx, reinterpret_cast<const uint8*>(prefix.data()), prefix.size()) < 0 ||
            pg_hmac_update(ctx, reinterpret_cast<const uint8*>(bytes.data()), bytes.size()) < 0 ||
            pg_hmac_final(ctx, mac.data(), mac.size()) < 0)
            elog(ERROR, "could not compute the HMAC of a pg_once WAL message: %s", pg_hmac_error(ctx));
    });
}

// Whether the context may be re-initialised without the key. Initialising with the key
// derives the padded key's digest states each time, most of an HMAC's cost for a message of
// this size; OpenSSL's HMAC_Init_ex keeps them when called again without a key, while
// PostgreSQL's own implementation (a server built without OpenSSL) would then use an empty
// key. So the first use checks, on a fixed input, that keyless re-initialisation gives the
// keyed result, and passes the key every time otherwise.
bool keyless_reinit_ok(pg_hmac_ctx* ctx, const std::array<uint8, kWalSecretSize>& key) {
    static int ok = -1;
    if (ok < 0) {
        std::array<uint8, 32> keyed{}, keyless{};
        hmac(ctx, &key, "pg_", "once", keyed);
        hmac(ctx, nullptr, "pg_", "once", keyless);
        ok = keyed == keyless;
    }
    return ok == 1;
}

}  // namespace

WalMessageOrigin current_wal_message_origin() {
    WalMessageOrigin origin;
    origin.system_identifier = GetSystemIdentifier();
    origin.database_oid = MyDatabaseId;
    origin.xid = pg_call([] { return GetTopTransactionId(); });
    return origin;
}

WalMessageTag wal_message_hmac_tag(const WalMessageOrigin& origin, std::string_view tagged_bytes) {
    const auto& key = database_secret();
    pg_hmac_ctx* ctx = backend_hmac_context();
    std::array<uint8, 32> mac{};  // SHA-256's output
    const std::string origin_bytes = wal_message_origin_bytes(origin);
    hmac(ctx, keyless_reinit_ok(ctx, key) ? nullptr : &key, origin_bytes, tagged_bytes, mac);
    return wal_message_tag(mac.data(), mac.size());
}

}  // namespace once::pg
