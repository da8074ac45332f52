// Where one open batch of the relay stands. Every lane goes round
//
//   idle --claim sent--> claiming --answer with messages--> publishing --the sink answered
//   for all of it, settlement sent--> settling --the database answered--> idle
//
// and back to idle at once from claiming when the answer is empty, and from any state when
// the batch is given back (a lost connection, the drain bound, a failed settlement).
#pragma once

namespace once::relay {

enum class LaneState { idle, claiming, publishing, settling };

const char* lane_state_name(LaneState s);

}  // namespace once::relay
