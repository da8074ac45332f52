// Which producer headers (once.send(..., headers => ...)) may travel as transport headers.
// The relay copies a message's headers into the HTTP request and into the NATS message; the
// names below belong to the transport or to the relay itself, so a producer that could set
// them could redirect a request (Host), desynchronise a kept-alive connection
// (Content-Length), forge the relay's own headers (Idempotency-Key, X-Once-Topic) or steer
// JetStream (Nats-Msg-Id, Nats-Expected-*, Nats-Rollup). The rule is a deny-list: standard
// names such as traceparent/tracestate and the application's own names pass unchanged
// (docs/security.md, "Producer headers", says why not a namespace). Pure C++ so that the
// relay (which drops refused headers) and once.send (which can refuse them) share it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace once {

// Limits per message. A header line costs the receiver memory and parsing; common servers
// refuse requests whose header section exceeds 8-16 KB (nginx 8 KB per line, Node 16 KB).
constexpr size_t kMaxHeaderNameBytes = 128;
constexpr size_t kMaxHeaderValueBytes = 4096;
constexpr size_t kMaxHeaderCount = 64;
constexpr size_t kMaxHeaderTotalBytes = 8192;   // sum of name + value over the kept headers

// Why this single header may not be sent, or nothing when it may. Checks: the name is an
// RFC 9110 token of at most kMaxHeaderNameBytes; it is not reserved (compared
// case-insensitively); the value has no control character other than HTAB (CR, LF and NUL
// included) and is at most kMaxHeaderValueBytes. The reason never quotes the value.
std::optional<std::string> header_refusal(std::string_view name, std::string_view value);

struct RefusedHeader {
    std::string name;     // as the producer wrote it (may itself be invalid: escape before logging)
    std::string reason;
};

struct HeaderSelection {
    std::vector<std::pair<std::string, std::string>> kept;   // in the producer's order
    std::vector<RefusedHeader> refused;
};

// Applies header_refusal to each header, then the per-message limits: after
// kMaxHeaderCount kept headers, or once the kept headers reach kMaxHeaderTotalBytes, the
// rest are refused (the earlier ones, in the producer's order, are kept).
HeaderSelection select_headers(const std::vector<std::pair<std::string, std::string>>& headers);

}  // namespace once
