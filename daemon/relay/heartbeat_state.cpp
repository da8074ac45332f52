#include "heartbeat_state.hpp"

namespace once::relay {

std::string heartbeat_state(const HeartbeatInputs& in) {
    if (in.stopping) return "stopped";
    if (!in.db_up) return "connecting";
    if (!in.sink_up) return "sink down";
    if (in.wal_stream_active == 1) return "streaming";
    if (in.wal_stream_active == 0) return "standing by";
    return "relaying";
}

double messages_per_second(uint64_t acked_before, uint64_t acked_now, double seconds) {
    if (seconds <= 0 || acked_now < acked_before) return 0;
    return static_cast<double>(acked_now - acked_before) / seconds;
}

}  // namespace once::relay
