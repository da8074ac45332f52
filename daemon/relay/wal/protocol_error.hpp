// A replication stream the relay cannot read: a truncated or unknown frame, a pgoutput
// message out of place. The stream's position is then unknown, so the reader gives up the
// connection and resumes from the slot's confirmed position.
#pragma once

#include <stdexcept>

namespace once::relay::wal {

class ProtocolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace once::relay::wal
