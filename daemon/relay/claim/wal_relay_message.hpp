// A decoded WAL message as the relay publishes it: the relay's Message, and a keyed message's
// order (the claim source keeps it beside the message to write it back in order).
#pragma once

#include "claim/wal_store.hpp"
#include "core/wal_message.hpp"
#include "message.hpp"

namespace once::relay {

// WalMessage -> the relay's Message (uuid text, created_at as timestamptz text in UTC). The
// strings are moved out of `m`: the stream's messages are decoded once and published once.
Message relay_message(once::WalMessage&& m);
// A keyed WalMessage's key_owner and key_seq (uuid text).
WalKeyOrder relay_key_order(const once::WalMessage& m);

}  // namespace once::relay
