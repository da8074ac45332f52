// Log values from outside (request data, database values, message fields, sink responses)
// without letting them shape the log: a value with a newline could otherwise append a forged
// line ("info: login: admin1 (admin)") to a log that is the record of what happened.
#pragma once

#include <string>
#include <string_view>

namespace once::relay {

// `text` with every control character written as an escape, so the result is one line and
// shows what was sent: \n, \r and \t as themselves, the other C0 controls, DEL and invalid
// UTF-8 bytes as \xNN, the C1 controls (U+0080..U+009F, which some terminals obey) as
// \xc2\xNN, and the backslash doubled, so an escape in the log is never ambiguous with a
// backslash that was sent. Valid UTF-8 otherwise passes through unchanged.
std::string log_safe(std::string_view text);

}  // namespace once::relay
