// WAL positions (LSNs) as the replication protocol carries them: a 64-bit byte offset into the
// WAL, written "16/B374D848" (high and low 32 bits in hex) in SQL and in START_REPLICATION.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace once::relay::wal {

using Lsn = uint64_t;

std::string format_lsn(Lsn lsn);

// Parses "X/X" (each half 1-8 hex digits); throws std::invalid_argument naming the text.
Lsn parse_lsn(std::string_view text);

}  // namespace once::relay::wal
