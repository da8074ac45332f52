#include "fingerprint.hpp"

#include "../core/canonical_json.hpp"
#include "../core/error.hpp"
#include "guard.hpp"

#include <string>

namespace once::pg {

bytea* request_fingerprint(Jsonb* request) {
    std::string canonical = "null";
    if (request != nullptr) {
        char* text = pg_call([&] { return JsonbToCString(nullptr, &request->root, VARSIZE(request)); });
        canonical = canonical_json(text);
        pfree(text);
    }
    bytea* result = static_cast<bytea*>(pg_call([] { return palloc(VARHDRSZ + PG_SHA256_DIGEST_LENGTH); }));
    SET_VARSIZE(result, VARHDRSZ + PG_SHA256_DIGEST_LENGTH);
    const char* data = canonical.data();
    size_t length = canonical.size();
    bool ok = pg_call([&] {
        pg_cryptohash_ctx* ctx = pg_cryptohash_create(PG_SHA256);
        bool good = ctx != nullptr && pg_cryptohash_init(ctx) == 0 &&
                    pg_cryptohash_update(ctx, reinterpret_cast<const uint8*>(data), length) == 0 &&
                    pg_cryptohash_final(ctx, reinterpret_cast<uint8*>(VARDATA(result)),
                                        PG_SHA256_DIGEST_LENGTH) == 0;
        pg_cryptohash_free(ctx);
        return good;
    });
    if (!ok) throw Error(ErrorCode::internal, "could not compute the SHA-256 request fingerprint");
    return result;
}

}  // namespace once::pg
