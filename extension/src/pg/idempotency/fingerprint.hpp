// Request fingerprints: SHA-256 over the canonical JSON form of a jsonb value
// (core/canonical_json.hpp), so equal requests match however a client spelled them.
#pragma once

#include "pg/common/postgres_headers.hpp"

namespace once::pg {

// Returns a palloc'd 32-byte bytea. A NULL request fingerprints as JSON null.
bytea* request_fingerprint(Jsonb* request);

}  // namespace once::pg
