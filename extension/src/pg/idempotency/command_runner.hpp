// Runs once.run's user command: SQL text with $1 = the request (jsonb), returning exactly one
// row with one column. It runs as the calling role with the caller's search_path, never as
// the extension owner. Plans are prepared once per (role, command text) and kept, so a hot
// once.run call costs no parsing or planning.
#pragma once

#include "pg/common/postgres_headers.hpp"

namespace once::pg {

// SPI must be connected. Stores the command's value (converted to jsonb) in *value, allocated
// in SPI's context; returns false when the value is SQL NULL.
bool run_command(text* command, Jsonb* request, Datum* value);

}  // namespace once::pg
