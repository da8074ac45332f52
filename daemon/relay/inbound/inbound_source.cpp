#include "inbound/inbound_source.hpp"

#include <stdexcept>

namespace once::relay {

bool is_valid_jetstream_name(const std::string& name) {
    if (name.empty() || name.size() > 255) return false;
    for (unsigned char c : name)
        if (c <= ' ' || c == 0x7f || c == '.' || c == '*' || c == '>' || c == '/' || c == '\\') return false;
    return true;
}

namespace {

bool is_valid_filter(const std::string& f) {
    if (f.empty()) return true;
    for (unsigned char c : f)
        if (c <= ' ' || c == 0x7f) return false;
    size_t pos = 0;
    std::string tokens = f + ".";
    for (size_t dot; (dot = tokens.find('.', pos)) != std::string::npos; pos = dot + 1) {
        std::string t = tokens.substr(pos, dot - pos);
        if (t.empty()) return false;
        if (t.find_first_of("*>") != std::string::npos && t.size() != 1) return false;
        if (t == ">" && dot + 1 != tokens.size()) return false;   // '>' only last
    }
    return true;
}

}  // namespace

InboundSource parse_inbound_source(const Uri& uri) {
    InboundSource s;
    s.description = uri.redacted();
    if (uri.scheme != "nats")
        throw std::invalid_argument("--source: \"" + uri.scheme + ":\" is not supported (use nats://host:4222?stream=S&consumer=C)");
    if (uri.hosts.empty()) throw std::invalid_argument("--source: the URI names no server (nats://host:4222?stream=S&consumer=C)");
    std::string hosts = uri.hosts + ",";
    for (size_t pos = 0, comma; (comma = hosts.find(',', pos)) != std::string::npos; pos = comma + 1) {
        std::string h = hosts.substr(pos, comma - pos);
        if (h.empty()) continue;
        if (h.find(':') == std::string::npos) h += ":4222";
        s.servers.push_back("nats://" + h);
    }
    if (uri.has_password) {
        s.user = uri.user;
        s.password = uri.password;
    } else {
        s.token = uri.user;
    }
    for (const auto& [k, v] : uri.query)
        if (k != "stream" && k != "consumer" && k != "filter" && k != "source" && k != "ack_wait" && k != "fetch")
            throw std::invalid_argument("--source: unknown URI parameter \"" + k +
                                        "\" (known: stream, consumer, filter, source, ack_wait, fetch)");
    s.stream = uri.param("stream");
    s.consumer = uri.param("consumer");
    s.filter = uri.param("filter");
    if (s.stream.empty()) throw std::invalid_argument("--source: the URI needs ?stream=NAME (the JetStream stream to read)");
    if (!is_valid_jetstream_name(s.stream))
        throw std::invalid_argument("--source: stream \"" + s.stream + "\" is not a valid JetStream name (no '.', '*', '>', '/', spaces)");
    if (s.consumer.empty())
        throw std::invalid_argument("--source: the URI needs &consumer=NAME (the durable consumer that keeps this relay's place)");
    if (!is_valid_jetstream_name(s.consumer))
        throw std::invalid_argument("--source: consumer \"" + s.consumer + "\" is not a valid JetStream name (no '.', '*', '>', '/', spaces)");
    if (!is_valid_filter(s.filter))
        throw std::invalid_argument("--source: filter \"" + s.filter + "\" is not a subject filter (tokens separated by '.', '*' a whole token, '>' last)");
    s.inbox_source = uri.param("source", s.stream);
    if (s.inbox_source.size() > 255)
        throw std::invalid_argument("--source: source= is longer than 255 bytes (the inbox's limit)");
    for (unsigned char c : s.inbox_source)
        if (c < 0x20 || c == 0x7f) throw std::invalid_argument("--source: source= holds control characters");
    if (std::string aw = uri.param("ack_wait"); !aw.empty()) {
        try {
            s.ack_wait = parse_duration(aw);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument(std::string("--source: ack_wait: ") + e.what());
        }
        if (s.ack_wait < Millis(1000) || s.ack_wait > Millis(3600000))
            throw std::invalid_argument("--source: ack_wait=" + aw + " is out of range 1s..1h");
    }
    if (std::string f = uri.param("fetch"); !f.empty()) {
        if (f.find_first_not_of("0123456789") != std::string::npos || f.size() > 5 || std::stoi(f) < 1 || std::stoi(f) > 10000)
            throw std::invalid_argument("--source: fetch=" + f + ": use a number 1..10000");
        s.fetch = std::stoi(f);
    }
    return s;
}

}  // namespace once::relay
