#include "claim/claim_mode.hpp"

namespace once::relay {

ClaimMode resolve_claim_mode(const std::string& option, ClaimMode sink_prefers) {
    if (option == "locked") return ClaimMode::locked;
    if (option == "leased") return ClaimMode::leased;
    return sink_prefers;   // "auto" (validate() refuses anything else)
}

const char* claim_mode_name(ClaimMode m) {
    switch (m) {
    case ClaimMode::locked: return "locked";
    case ClaimMode::leased: return "leased";
    case ClaimMode::wal: return "wal";
    }
    return "?";
}

}  // namespace once::relay
