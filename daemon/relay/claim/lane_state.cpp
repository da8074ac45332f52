#include "claim/lane_state.hpp"

namespace once::relay {

const char* lane_state_name(LaneState s) {
    switch (s) {
        case LaneState::idle: return "idle";
        case LaneState::claiming: return "claiming";
        case LaneState::publishing: return "publishing";
        case LaneState::settling: return "settling";
    }
    return "?";
}

}  // namespace once::relay
