#include "sinks/jetstream_errors.hpp"

namespace once::relay {

Verdict jetstream_publish_error_verdict(int err_code) {
    return err_code == kJetStreamMessageTooLarge ? Verdict::dead : Verdict::retry;
}

}  // namespace once::relay
