#include "options.hpp"
#include "sinks/http_sink.hpp"
#include "sinks/nats_sink.hpp"
#include "sinks/postgres_sink.hpp"
#include "sinks/sink.hpp"
#include "sinks/stdout_sink.hpp"
#include "uri.hpp"

#include <algorithm>

namespace once::relay {

std::unique_ptr<Sink> make_sink(const Options& o) {
    Uri uri;
    try {
        uri = parse_uri(o.sink);
    } catch (const std::invalid_argument& e) {
        throw SinkError(std::string("--sink: ") + e.what());
    }
    if (uri.scheme == "stdout") return std::make_unique<StdoutSink>();
    if (uri.scheme == "http" || uri.scheme == "https") {
        if (uri.hosts.empty()) throw SinkError("--sink " + uri.redacted() + ": the URL names no host");
        size_t connections = static_cast<size_t>(std::min(o.max_in_flight, 64));
        return std::make_unique<HttpSink>(o.sink, o.sink_timeout, o.connect_timeout, connections);
    }
    if (uri.scheme == "nats")
        return std::make_unique<NatsSink>(uri, o.sink_timeout, o.connect_timeout, static_cast<size_t>(o.max_in_flight));
    if (uri.scheme == "postgresql" || uri.scheme == "postgres")
        return std::make_unique<PostgresSink>(uri, o.name, o.sink_timeout, o.connect_timeout);
    throw SinkError("--sink: unknown scheme \"" + uri.scheme + ":\" (use stdout:, http://, https://, nats:// or postgresql://)");
}

}  // namespace once::relay
