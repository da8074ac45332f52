// The tag of the WAL transport's messages (docs/design.md, "WAL transport"):
// HMAC-SHA256 with the database's key (once.wal_secret), so that once-relay publishes only
// what once.send emitted. pg_logical_emit_message is executable by PUBLIC, so any role could
// otherwise put a "pg_once" message into the stream and skip once.send's checks.
//
// The key is read once per backend (as the extension's owner: nobody else may read the
// table) and kept for the backend's life. Replacing it therefore needs every producer
// session and every relay to reconnect (so does DROP and CREATE EXTENSION in one session);
// pg_once offers no rotation command.
#pragma once

#include "core/wal_message.hpp"

#include <string_view>

namespace once::pg {

// The origin of a message emitted now: this cluster, this database, and the current top-level
// transaction (its xid, assigned here if it has none yet: a transactional logical message
// needs one anyway, and pgoutput's Begin carries the top-level one even for a message emitted
// in a subtransaction).
WalMessageOrigin current_wal_message_origin();

// The tag of `tagged_bytes` (encode_wal_message's output) emitted at `origin`, with this
// database's key. Call inside an SPI session (the first call reads the key).
WalMessageTag wal_message_hmac_tag(const WalMessageOrigin& origin, std::string_view tagged_bytes);

}  // namespace once::pg
