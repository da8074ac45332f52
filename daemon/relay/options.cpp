#include "options.hpp"

#include "option_loading.hpp"
#include "wal/start_replication_command.hpp"

#include "core/error.hpp"
#include "core/inbox.hpp"
#include "core/topic.hpp"

#include <boost/program_options.hpp>

#include <sstream>
#include <stdexcept>

namespace po = boost::program_options;

namespace once::relay {

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::string item;
    std::istringstream in(s);
    while (std::getline(in, item, ',')) {
        size_t b = item.find_first_not_of(" \t");
        size_t e = item.find_last_not_of(" \t");
        if (b == std::string::npos) continue;
        out.push_back(item.substr(b, e - b + 1));
    }
    return out;
}

namespace {

po::options_description option_table() {
    po::options_description desc("once-relay options (also valid in the --config file as name = value)");
    desc.add_options()
        ("help,h", "show this help and exit")
        ("version", "show the version and exit")
        ("check-config", "validate the configuration (and reach the sink) then exit")
        ("config", po::value<std::string>(), "INI file with any of these options; the command line wins")
        ("db", po::value<std::string>(), "libpq connection string or URI of the database to relay from "
                                          "(several hosts + target_session_attrs=read-write follow a failover)")
        ("sink", po::value<std::string>(), "where messages go: stdout:, http(s)://..., nats://host:port?stream=S, "
                                            "postgresql://... (the target's once.deliver)")
        ("source", po::value<std::string>(), "inbound mode: read a JetStream stream through a durable pull consumer, "
                                              "nats://host:4222?stream=S&consumer=C[&filter=F][&source=NAME][&ack_wait=30s]"
                                              "[&fetch=100], and deliver each message into --db's inbox (once.deliver); "
                                              "instead of --sink")
        ("name", po::value<std::string>(), "relay name: shown in claims and logs, inbox source (default once-relay)")
        ("topics", po::value<std::string>(), "comma-separated topic patterns to relay (a.*,b.>); default all")
        ("batch", po::value<int>(), "messages per claim, 1..10000 (default 100)")
        ("lease", po::value<std::string>(), "claim lease; extended while a slow sink works (default 30s)")
        ("poll-interval", po::value<std::string>(), "claim at least this often without a wake-up (default 1s)")
        ("max-in-flight", po::value<int>(), "unacknowledged publishes at the sink, 1..100000 (default 256)")
        ("metrics", po::value<std::string>(), "host:port serving /metrics and /healthz (default off)")
        ("log-level", po::value<std::string>(), "trace, debug, info, warn, error or off (default info)")
        ("maintenance", po::value<std::string>(), "on|off: run once.purge/once.saga_tick, one relay per database (default on)")
        ("synchronous-commit", po::value<std::string>(), "synchronous_commit of the relay's own claim/ack/nack transactions: "
                                                         "off (default: a crash may lose an ack, the message is delivered again), "
                                                         "local, remote_write, on, remote_apply")
        ("claim-mode", po::value<std::string>(), "locked|leased|auto: locked holds each batch in one transaction "
                                                 "(once.claim_locked, no lease write); leased takes a lease and "
                                                 "extends it for slow sinks; auto (default) is what the sink "
                                                 "prefers: leased for http(s), locked for the others")
        ("transport", po::value<std::string>(), "table|wal: wal also streams the messages once.send wrote to the WAL "
                                                "(once.transport = 'wal') from a logical replication slot, beside the "
                                                "outbox table; needs a role with REPLICATION (default table)")
        ("wal-slot", po::value<std::string>(), "--transport wal: the logical replication slot (default once_relay)")
        ("wal-publication", po::value<std::string>(), "--transport wal: the slot's publication (default once_outbox)")
        ("create-wal-slot", "create the publication (if missing) and the slot of --transport wal, then exit")
        ("drop-wal-slot", "drop the slot of --transport wal, then exit")
        ("wal-accept-slot-loss-on-failover", "--transport wal before PostgreSQL 17: stream although the server has "
                                             "physical standbys, accepting that a promotion loses the slot and the "
                                             "messages not yet published (default: refuse)")
        ("purge-interval", po::value<std::string>(), "how often to call once.purge() (default 1min)")
        ("saga-tick-interval", po::value<std::string>(), "how often to call once.saga_tick() (default 1s)")
        ("sink-timeout", po::value<std::string>(), "bound for one publish: HTTP request, NATS PubAck, inbox call (default 10s)")
        ("connect-timeout", po::value<std::string>(), "bound for opening a connection (default 5s)")
        ("shutdown-timeout", po::value<std::string>(), "SIGTERM/SIGINT: bound for draining in-flight work (default 10s)")
        ("reconnect-max", po::value<std::string>(), "cap of the jittered reconnect backoff (default 30s)")
        ("stats-interval", po::value<std::string>(), "periodic throughput summary in the log (default 1min)")
        ("heartbeat-interval", po::value<std::string>(), "write the relay's heartbeat to the database this often (default 10s)")
        ("webhook-secret-file", po::value<std::vector<std::string>>()->composing(),
         "http(s) sinks: sign each request (Standard Webhooks) with the whsec_ secret(s) in this file; "
         "repeat it, or put several secrets in the file, to sign with two during a rotation "
         "(default: the systemd credential webhook-secret, if loaded)")
        ("nats-token-file", po::value<std::string>(), "nats sinks: file holding the NATS token when the URL has none "
                                                      "(default: the systemd credential nats-token, if loaded)")
        ("cloudevents", po::value<std::string>(), "on|off: http(s) and nats sinks send CloudEvents 1.0 in binary "
                                                  "content mode (ce-* headers) (default off)")
        ("cloudevents-source", po::value<std::string>(), "the events' ce-source URI-reference "
                                                         "(default /pg_once/<database>/<relay name>)")
        ("http-body", po::value<std::string>(), "payload|envelope: http(s) sinks post the payload (default), or "
                                                "{\"type\",\"timestamp\",\"id\",\"key\",\"headers\",\"data\"} so that "
                                                "a webhook signature covers the topic, key and headers")
        ("listen-webhooks", po::value<std::string>(), "host:port: receive signed webhooks (Standard Webhooks, "
                                                      "CloudEvents) on POST /webhooks[/<topic>] into the --db "
                                                      "database's inbox (once.deliver) instead of relaying its outbox")
        ("webhooks-secret-file", po::value<std::vector<std::string>>()->composing(),
         "--listen-webhooks: the whsec_ secret(s) that requests are verified with; repeat it, or put several in the "
         "file, to accept either during a rotation (default: the systemd credential inbound-webhook-secret)")
        ("webhooks-source", po::value<std::string>(), "--listen-webhooks: the inbox source of the messages (default --name)")
        ("webhooks-max-body", po::value<int>(), "--listen-webhooks: largest body in bytes, 1..67108864; larger "
                                                "requests get 413 (default 1048576)")
        ("webhooks-concurrency", po::value<int>(), "--listen-webhooks: requests delivered at once, 1..10000; more get "
                                                   "503 with Retry-After (default 64)")
        ("webhooks-tolerance", po::value<std::string>(), "--listen-webhooks: how far webhook-timestamp may be from now, "
                                                         "either way, 1s..1h (default 5min)");
    return desc;
}

}  // namespace

Options parse_options(int argc, const char* const argv[], std::string* help_text) {
    Options o;
    auto desc = option_table();
    if (help_text) {
        std::ostringstream help;
        help << "Usage: once-relay --db CONNINFO --sink URI [options]\n"
                "       once-relay --db CONNINFO --source nats://...?stream=S&consumer=C [options]\n"
                "Delivers the pg_once outbox of one database to a sink, or (--source) a JetStream stream into its inbox.\n\n"
             << desc
             << "\nDurations take a unit: 200ms, 30s, 5min, 1h. Signals: SIGTERM/SIGINT drain and exit,\n"
                "SIGHUP reloads the config file.\n";
        *help_text = help.str();
    }
    po::variables_map vm = read_command_line(argc, argv, desc);
    o.db_from_command_line = vm.count("db") > 0;
    o.sink_from_command_line = vm.count("sink") > 0;
    if (vm.count("help")) { o.show_help = true; return o; }
    if (vm.count("version")) { o.show_version = true; return o; }
    o.config = load_config_file(vm, desc);
    o.check_config = vm.count("check-config") > 0;
    auto str = [&](const char* n, std::string& dst) { if (vm.count(n)) dst = vm[n].as<std::string>(); };
    str("db", o.db);
    str("sink", o.sink);
    str("source", o.source);
    str("name", o.name);
    str("metrics", o.metrics);
    str("log-level", o.log_level);
    str("synchronous-commit", o.synchronous_commit);
    str("claim-mode", o.claim_mode);
    str("transport", o.transport);
    str("wal-slot", o.wal_slot);
    str("wal-publication", o.wal_publication);
    o.create_wal_slot = vm.count("create-wal-slot") > 0;
    o.drop_wal_slot = vm.count("drop-wal-slot") > 0;
    o.wal_accept_slot_loss_on_failover = vm.count("wal-accept-slot-loss-on-failover") > 0;
    if (vm.count("topics")) o.topics = split_list(vm["topics"].as<std::string>());
    if (vm.count("batch")) o.batch = vm["batch"].as<int>();
    if (vm.count("max-in-flight")) o.max_in_flight = vm["max-in-flight"].as<int>();
    if (vm.count("webhook-secret-file")) o.webhook_secret_files = vm["webhook-secret-file"].as<std::vector<std::string>>();
    str("nats-token-file", o.nats_token_file);
    if (vm.count("cloudevents")) o.cloudevents = parse_on_off("cloudevents", vm["cloudevents"].as<std::string>());
    str("cloudevents-source", o.cloudevents_source);
    if (vm.count("http-body")) {
        const std::string body = vm["http-body"].as<std::string>();
        if (body != "payload" && body != "envelope") throw std::runtime_error("--http-body: \"" + body + "\" (use payload or envelope)");
        o.http_body_envelope = body == "envelope";
    }
    str("listen-webhooks", o.listen_webhooks);
    if (vm.count("webhooks-secret-file")) o.webhooks_secret_files = vm["webhooks-secret-file"].as<std::vector<std::string>>();
    str("webhooks-source", o.webhooks_source);
    if (vm.count("webhooks-max-body")) {
        int b = vm["webhooks-max-body"].as<int>();
        if (b < 1 || b > 64 * 1024 * 1024) throw std::runtime_error("--webhooks-max-body " + std::to_string(b) + " is out of range 1..67108864");
        o.webhooks_max_body = static_cast<size_t>(b);
    }
    if (vm.count("webhooks-concurrency")) o.webhooks_concurrency = vm["webhooks-concurrency"].as<int>();
    o.webhooks_tolerance = duration_option(vm, "webhooks-tolerance", o.webhooks_tolerance);
    if (vm.count("maintenance")) o.maintenance = parse_on_off("maintenance", vm["maintenance"].as<std::string>());
    o.lease = duration_option(vm, "lease", o.lease);
    o.poll_interval = duration_option(vm, "poll-interval", o.poll_interval);
    o.purge_interval = duration_option(vm, "purge-interval", o.purge_interval);
    o.saga_tick_interval = duration_option(vm, "saga-tick-interval", o.saga_tick_interval);
    o.sink_timeout = duration_option(vm, "sink-timeout", o.sink_timeout);
    o.connect_timeout = duration_option(vm, "connect-timeout", o.connect_timeout);
    o.shutdown_timeout = duration_option(vm, "shutdown-timeout", o.shutdown_timeout);
    o.reconnect_max = duration_option(vm, "reconnect-max", o.reconnect_max);
    o.stats_interval = duration_option(vm, "stats-interval", o.stats_interval);
    o.heartbeat_interval = duration_option(vm, "heartbeat-interval", o.heartbeat_interval);
    validate(o);
    return o;
}

namespace {

void validate_webhook_receiver(const Options& o) {
    auto bad = [](const std::string& m) { return std::runtime_error(m); };
    bool on = !o.listen_webhooks.empty();
    if (!on) {
        if (!o.webhooks_secret_files.empty() || !o.webhooks_source.empty())
            throw bad("--webhooks-secret-file and --webhooks-source need --listen-webhooks");
        return;
    }
    if (!o.sink.empty())
        throw bad("--listen-webhooks and --sink: a once-relay either receives webhooks into --db's inbox or relays "
                  "its outbox; run two");
    if (!o.webhook_secret_files.empty())
        throw bad("--webhook-secret-file signs the http sink's requests; the secrets that --listen-webhooks verifies "
                  "with are --webhooks-secret-file");
    auto colon = o.listen_webhooks.rfind(':');
    std::string port = colon == std::string::npos ? "" : o.listen_webhooks.substr(colon + 1);
    if (colon == 0 || port.empty() || port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 ||
        std::stol(port) > 65535)
        throw bad("--listen-webhooks \"" + o.listen_webhooks + "\": use host:port, e.g. 127.0.0.1:8080");
    for (const auto& f : o.webhooks_secret_files)
        if (f.empty()) throw bad("--webhooks-secret-file: empty path");
        else if (f.rfind("whsec_", 0) == 0)
            throw bad("--webhooks-secret-file takes the path of a file that holds the secret, not the secret itself "
                      "(a secret on the command line is visible to every local user)");
    if (!o.webhooks_source.empty()) {
        try {
            once::validate_inbox_source(o.webhooks_source);
        } catch (const once::Error& e) {
            throw bad("--webhooks-source: " + std::string(e.what()));
        }
    }
    if (o.webhooks_concurrency < 1 || o.webhooks_concurrency > 10000)
        throw bad("--webhooks-concurrency " + std::to_string(o.webhooks_concurrency) + " is out of range 1..10000");
    if (o.webhooks_tolerance < Millis(1000) || o.webhooks_tolerance > Millis(3600000))
        throw bad("--webhooks-tolerance " + format_duration(o.webhooks_tolerance) + " is out of range 1s..1h");
}

}  // namespace

void validate(const Options& o) {
    auto bad = [](const std::string& m) { return std::runtime_error(m); };
    if (o.db.empty()) throw bad("--db is required: the libpq connection string of the database to relay from");
    if (o.create_wal_slot && o.drop_wal_slot) throw bad("--create-wal-slot and --drop-wal-slot: choose one");
    if (o.transport != "table" && o.transport != "wal") throw bad("--transport \"" + o.transport + "\": use table or wal");
    for (const auto* n : {&o.wal_slot, &o.wal_publication})
        if (!wal::is_valid_replication_name(*n))
            throw bad(std::string(n == &o.wal_slot ? "--wal-slot" : "--wal-publication") + " \"" + *n +
                      "\": use 1-63 lower-case letters, digits and underscores");
    validate_webhook_receiver(o);
    if (!o.source.empty() && !o.sink.empty())
        throw bad("--source and --sink: choose one (--source reads a stream into --db's inbox, --sink relays --db's outbox)");
    if (!o.source.empty() && !o.listen_webhooks.empty())
        throw bad("--source and --listen-webhooks: choose one (one relay receives from one place)");
    if (!o.source.empty() && (o.create_wal_slot || o.drop_wal_slot || o.transport != "table"))
        throw bad("--source: the inbound relay has no outbox transport (--transport, --create-wal-slot, --drop-wal-slot)");
    if (o.sink.empty() && o.source.empty() && o.listen_webhooks.empty() && !o.create_wal_slot && !o.drop_wal_slot)
        throw bad("--sink is required: stdout:, http(s)://..., nats://... or postgresql://... (or --source or --listen-webhooks for inbound mode)");
    if (o.name.empty() || o.name.size() > 63) throw bad("--name must be 1..63 characters");
    for (char c : o.name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '@'))
            throw bad("--name \"" + o.name + "\" may only contain letters, digits, '-', '_', '.', '@'");
    if (o.batch < 1 || o.batch > 10000) throw bad("--batch " + std::to_string(o.batch) + " is out of range 1..10000");
    if (o.max_in_flight < 1 || o.max_in_flight > 100000)
        throw bad("--max-in-flight " + std::to_string(o.max_in_flight) + " is out of range 1..100000");
    if (o.lease < Millis(1000)) throw bad("--lease " + format_duration(o.lease) + " is shorter than 1s");
    if (o.poll_interval < Millis(10)) throw bad("--poll-interval " + format_duration(o.poll_interval) + " is shorter than 10ms");
    if (o.sink_timeout < Millis(10)) throw bad("--sink-timeout is shorter than 10ms");
    if (o.sink_timeout >= o.lease * 100) throw bad("--sink-timeout must be below 100 x --lease");
    if (o.connect_timeout < Millis(1000)) throw bad("--connect-timeout is shorter than 1s (libpq counts whole seconds)");
    if (o.purge_interval < Millis(100) || o.saga_tick_interval < Millis(10))
        throw bad("--purge-interval must be >= 100ms and --saga-tick-interval >= 10ms");
    if (o.reconnect_max < Millis(100)) throw bad("--reconnect-max is shorter than 100ms");
    if (o.stats_interval < Millis(1000)) throw bad("--stats-interval is shorter than 1s");
    if (o.heartbeat_interval < Millis(1000) || o.heartbeat_interval > Millis(3600000))
        throw bad("--heartbeat-interval " + format_duration(o.heartbeat_interval) + " is not between 1s and 1h");
    static const char* commits[] = {"off", "local", "remote_write", "on", "remote_apply"};
    bool commit_ok = false;
    for (auto* c : commits) commit_ok |= (o.synchronous_commit == c);
    if (!commit_ok)
        throw bad("--synchronous-commit \"" + o.synchronous_commit + "\": use off, local, remote_write, on or remote_apply");
    if (o.claim_mode != "auto" && o.claim_mode != "locked" && o.claim_mode != "leased")
        throw bad("--claim-mode \"" + o.claim_mode + "\": use locked, leased or auto");
    static const char* levels[] = {"trace", "debug", "info", "warn", "error", "off"};
    bool level_ok = false;
    for (auto* l : levels) level_ok |= (o.log_level == l);
    if (!level_ok) throw bad("--log-level \"" + o.log_level + "\": use trace, debug, info, warn, error or off");
    for (const auto& t : o.topics) {
        try {
            once::validate_topic_pattern(t);
        } catch (const once::Error& e) {
            throw bad("--topics: " + std::string(e.what()) + (e.detail().empty() ? "" : " (" + e.detail() + ")"));
        }
    }
    for (const auto& f : o.webhook_secret_files)
        if (f.empty()) throw bad("--webhook-secret-file: empty path");
        else if (f.rfind("whsec_", 0) == 0)   // also what --webhook-secret would be taken for
            throw bad("--webhook-secret-file takes the path of a file that holds the secret, not the secret itself "
                      "(a secret on the command line is visible to every local user)");
    for (char c : o.cloudevents_source)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) throw bad("--cloudevents-source: control characters");
    if (!o.cloudevents_source.empty() && !o.cloudevents) throw bad("--cloudevents-source needs --cloudevents on");
    if (!o.metrics.empty()) {
        auto colon = o.metrics.rfind(':');
        if (colon == std::string::npos || colon == 0) throw bad("--metrics \"" + o.metrics + "\": use host:port, e.g. 127.0.0.1:9187");
        std::string port = o.metrics.substr(colon + 1);
        if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos || std::stol(port) > 65535)
            throw bad("--metrics \"" + o.metrics + "\": the port must be a number 0..65535");
    }
}

namespace {

// The settings a SIGHUP reload cannot change (the connections, the metrics listener and the
// claim mode are set up once): the one list both functions below use.
template <class Visit>
void for_each_restart_only(Visit&& visit) {
    visit("db", &Options::db);
    visit("sink", &Options::sink);
    visit("source", &Options::source);
    visit("name", &Options::name);
    visit("metrics", &Options::metrics);
    visit("heartbeat-interval", &Options::heartbeat_interval);
    visit("connect-timeout", &Options::connect_timeout);
    visit("synchronous-commit", &Options::synchronous_commit);
    visit("claim-mode", &Options::claim_mode);
    visit("transport", &Options::transport);
    visit("wal-slot", &Options::wal_slot);
    visit("wal-publication", &Options::wal_publication);
    visit("wal-accept-slot-loss-on-failover", &Options::wal_accept_slot_loss_on_failover);
    // The sink reads its secrets and CloudEvents settings once, when it is made.
    visit("webhook-secret-file", &Options::webhook_secret_files);
    visit("nats-token-file", &Options::nats_token_file);
    visit("cloudevents", &Options::cloudevents);
    visit("cloudevents-source", &Options::cloudevents_source);
    visit("http-body", &Options::http_body_envelope);
}

}  // namespace

std::vector<std::string> restart_only_changes(const Options& a, const Options& b) {
    std::vector<std::string> out;
    for_each_restart_only([&](const char* name, auto member) {
        if (a.*member != b.*member) out.push_back(name);
    });
    return out;
}

std::vector<std::string> keep_restart_only(const Options& running, Options& fresh) {
    auto changed = restart_only_changes(running, fresh);
    for_each_restart_only([&](const char*, auto member) { fresh.*member = running.*member; });
    return changed;
}

}  // namespace once::relay
