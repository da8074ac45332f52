#include "outbox/locked_hold_bound.hpp"

namespace once::relay {

Millis locked_publish_limit(Millis lease) { return lease; }

Millis locked_hold_bound(Millis lease, Millis sink_timeout) {
    return locked_publish_limit(lease) + sink_timeout + kSettleMargin;
}

std::vector<std::string> locked_session_settings(Millis hold_bound) {
    std::string ms = std::to_string(hold_bound.count());
    return {
        // SIGSTOP, a hung sink: the server sees a transaction that sends nothing.
        "SET idle_in_transaction_session_timeout = " + ms,
        // A partition or a powered-off host while the server waits: keepalive probes after 10 s
        // of silence, every 5 s, 3 unanswered ones drop the connection (~25 s, below the bound
        // for every allowed --lease). (Ignored on Unix sockets, which cannot be partitioned.)
        "SET tcp_keepalives_idle = 10",
        "SET tcp_keepalives_interval = 5",
        "SET tcp_keepalives_count = 3",
        // A partition while the server is sending (a claim's answer): data unacknowledged this
        // long drops the connection, where the kernel's retransmissions would take ~15 min.
        "SET tcp_user_timeout = " + ms,
    };
}

}  // namespace once::relay
