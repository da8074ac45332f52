#include "credentials.hpp"
#include "options.hpp"
#include "sinks/cloudevents.hpp"
#include "sinks/http_sink.hpp"
#include "sinks/nats_sink.hpp"
#include "sinks/postgres_sink.hpp"
#include "sinks/sink.hpp"
#include "sinks/stdout_sink.hpp"
#include "uri.hpp"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

namespace once::relay {

namespace {

// The database the relay reads from, as libpq would pick it (conninfo, then PGDATABASE, then
// the user name, then PGUSER): for the default ce-source.
std::string conninfo_database(const std::string& conninfo) {
    std::string dbname, user;
    if (PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), nullptr)) {
        for (PQconninfoOption* p = opts; p->keyword; ++p) {
            if (!p->val || !*p->val) continue;
            if (std::string(p->keyword) == "dbname") dbname = p->val;
            if (std::string(p->keyword) == "user") user = p->val;
        }
        PQconninfoFree(opts);
    }
    const char* env_db = std::getenv("PGDATABASE");
    const char* env_user = std::getenv("PGUSER");
    if (dbname.empty() && env_db) dbname = env_db;
    if (dbname.empty()) dbname = !user.empty() ? user : (env_user ? env_user : "postgres");
    return dbname;
}

std::string cloudevents_source(const Options& o) {
    std::string source = o.cloudevents_source.empty() ? default_cloudevents_source(conninfo_database(o.db), o.name)
                                                      : o.cloudevents_source;
    spdlog::info("CloudEvents binary content mode, ce-source {}", source);
    return source;
}

// Signing keys: each --webhook-secret-file, then the systemd credential webhook-secret.
std::vector<WebhookKey> webhook_keys(const Options& o) {
    std::vector<std::string> files = o.webhook_secret_files;
    if (auto cred = credential_path("webhook-secret")) files.push_back(*cred);
    std::vector<WebhookKey> keys;
    for (const auto& f : files) {
        std::string content = read_secret_file(f, "webhook secret");
        try {
            for (auto& k : parse_webhook_secret_file(content)) keys.push_back(std::move(k));
        } catch (const std::invalid_argument& e) {
            throw SinkError(std::string(e.what()) + " (in " + f + ")");
        }
    }
    if (!keys.empty()) spdlog::info("signing requests (Standard Webhooks) with {} secret(s)", keys.size());
    return keys;
}

std::string trimmed(std::string s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    size_t e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

std::unique_ptr<Sink> make_sink(const Options& o) {
    Uri uri;
    try {
        uri = parse_uri(o.sink);
    } catch (const std::invalid_argument& e) {
        throw SinkError(std::string("--sink: ") + e.what());
    }
    bool http = uri.scheme == "http" || uri.scheme == "https";
    if (!o.webhook_secret_files.empty() && !http)
        throw SinkError("--webhook-secret-file: only http(s) sinks sign their requests");
    if (!o.nats_token_file.empty() && uri.scheme != "nats") throw SinkError("--nats-token-file: the sink is not nats://");
    if (o.http_body_envelope && !http) throw SinkError("--http-body: the sink is not http(s)");
    if (o.cloudevents && !http && uri.scheme != "nats")
        throw SinkError("--cloudevents: only http(s) and nats sinks send CloudEvents");
    if (uri.scheme == "stdout") return std::make_unique<StdoutSink>();
    if (http) {
        if (uri.hosts.empty()) throw SinkError("--sink " + uri.redacted() + ": the URL names no host");
        size_t connections = static_cast<size_t>(std::min(o.max_in_flight, 64));
        auto sink = std::make_unique<HttpSink>(o.sink, o.sink_timeout, o.connect_timeout, connections);
        sink->set_webhook_keys(webhook_keys(o));
        if (o.cloudevents) sink->set_cloudevents_source(cloudevents_source(o));
        if (o.http_body_envelope) sink->set_body(HttpBody::envelope);
        return sink;
    }
    if (uri.scheme == "nats") {
        auto sink = std::make_unique<NatsSink>(uri, o.sink_timeout, o.connect_timeout, static_cast<size_t>(o.max_in_flight));
        std::string token_file = o.nats_token_file;
        if (token_file.empty() && !sink->has_credentials())
            if (auto cred = credential_path("nats-token")) token_file = *cred;
        if (!token_file.empty()) {
            if (sink->has_credentials()) throw SinkError("--nats-token-file: the sink URL already has a user or token");
            std::string token = trimmed(read_secret_file(token_file, "NATS token"));
            if (token.empty() || token.find_first_of(" \t\r\n") != std::string::npos)
                throw SinkError("the NATS token file \"" + token_file + "\" must hold one token");
            sink->set_token(std::move(token));
        }
        if (o.cloudevents) sink->set_cloudevents_source(cloudevents_source(o));
        return sink;
    }
    if (uri.scheme == "postgresql" || uri.scheme == "postgres")
        return std::make_unique<PostgresSink>(uri, o.name, o.sink_timeout, o.connect_timeout);
    throw SinkError("--sink: unknown scheme \"" + uri.scheme + ":\" (use stdout:, http://, https://, nats:// or postgresql://)");
}

}  // namespace once::relay
