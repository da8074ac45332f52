// Role-scoped explicit message ids; why: message_ids.hpp.
#include "pg/outbox/message_ids.hpp"

#include "core/error.hpp"
#include "pg/common/guard.hpp"
#include "pg/common/postgres_headers.hpp"

extern "C" {
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "miscadmin.h"
}

#include <string>

namespace once::pg {

Uuid role_scoped_message_id(const Uuid& chosen) {
    const std::string role = pg_call([] { return std::string(GetUserNameFromId(GetUserId(), false)); });
    const std::string input = role_scoped_id_input(role, chosen);
    uint8 digest[PG_SHA256_DIGEST_LENGTH];
    bool ok = pg_call([&] {
        pg_cryptohash_ctx* ctx = pg_cryptohash_create(PG_SHA256);
        bool done = ctx != nullptr && pg_cryptohash_init(ctx) == 0 &&
                    pg_cryptohash_update(ctx, reinterpret_cast<const uint8*>(input.data()), input.size()) == 0 &&
                    pg_cryptohash_final(ctx, digest, sizeof digest) == 0;
        pg_cryptohash_free(ctx);
        return done;
    });
    if (!ok) throw Error(ErrorCode::internal, "could not compute the SHA-256 of a message id");
    return uuid_v8_from_hash(digest);
}

}  // namespace once::pg
