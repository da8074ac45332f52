// once-relay entry point: parse options, refuse root, open the sink, serve metrics, run the loop.
#include "credentials.hpp"
#include "daemon_logger.hpp"
#include "inbound/inbound_relay.hpp"
#include "inbound/jetstream_consumer.hpp"
#include "inbound/webhook_mode.hpp"
#include "log_safe.hpp"
#include "metrics.hpp"
#include "metrics_server.hpp"
#include "options.hpp"
#include "outbox/gauge_reader.hpp"
#include "outbox/heartbeat_writer.hpp"
#include "relay.hpp"
#include "wal/slot_admin.hpp"
#include "signals.hpp"
#include "sinks/sink.hpp"
#include "outbox/session_check.hpp"
#include "outbox/source_db.hpp"
#include "systemd_notify.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace {

void setup_logging(const std::string& level) {
    // The outbox gauges' reader (outbox/gauge_reader) logs from its own thread.
    once::relay::install_daemon_logger("once-relay", level);
}

int fail(const std::string& msg, int code = 1) {
    std::fprintf(stderr, "once-relay: %s\n", once::relay::log_safe(msg).c_str());
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace once::relay;
    block_relay_signals();   // before any thread exists, so all inherit the mask
    std::vector<std::string> args(argv, argv + argc);
    auto reparse = [args]() {
        std::vector<const char*> v;
        for (auto& a : args) v.push_back(a.c_str());
        return parse_options(static_cast<int>(v.size()), v.data(), nullptr);
    };
    Options options;
    std::string help;
    try {
        options = parse_options(argc, argv, &help);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "once-relay: %s\nTry once-relay --help.\n", once::relay::log_safe(e.what()).c_str());
        return 2;
    }
    if (options.show_help) { std::fputs(help.c_str(), stdout); return 0; }
    if (options.show_version) { std::printf("once-relay %s\n", ONCE_VERSION); return 0; }
    if (geteuid() == 0)
        return fail("refusing to run as root: run it as an unprivileged user (the systemd unit uses DynamicUser=yes)");
    try {
        setup_logging(options.log_level);
        for (const auto& w : command_line_secret_warnings(options)) spdlog::warn("{}", w);
        SourceDb::check_conninfo(options.db);
        if (!options.listen_webhooks.empty()) return run_webhook_receiver(options);
        if (options.create_wal_slot || options.drop_wal_slot) {
            try {
                std::string done = options.create_wal_slot
                                       ? wal::create_wal_slot(options.db, options.wal_slot, options.wal_publication,
                                                              options.connect_timeout)
                                       : wal::drop_wal_slot(options.db, options.wal_slot, options.connect_timeout);
                std::printf("once-relay: %s\n", done.c_str());
                return 0;
            } catch (const wal::SlotAdminError& e) {
                return fail(e.what());
            }
        }
        if (!options.source.empty() && options.check_config) return check_inbound_config(options);
        if (!options.source.empty()) {
            // Inbound mode: --db is the inbox database, the stream its source.
            Metrics metrics;
            std::unique_ptr<MetricsServer> metrics_server;
            if (!options.metrics.empty()) {
                metrics_server = std::make_unique<MetricsServer>(options.metrics, metrics, options.name);
                spdlog::info("metrics on http://{}/metrics", options.metrics);
            }
            SignalFd signals;
            SystemdNotifier notifier;
            return run_inbound(options, metrics, signals, notifier);
        }
        std::unique_ptr<Sink> sink = make_sink(options);
        if (options.check_config) {
            std::string note = sink->check();
            if (!note.empty()) std::printf("once-relay: %s\n", note.c_str());
            SourceDb db(options.db, options.name, options.connect_timeout);
            db.connect();
            std::printf("once-relay: configuration OK (database %s, sink %s)\n", db.redacted_conninfo().c_str(),
                        sink->describe().c_str());
            return 0;
        }
        sink->open();
        Metrics metrics;
        // The outbox gauges' reader first: it enables them before the server thread reads.
        std::unique_ptr<GaugeReader> gauge_reader;
        std::unique_ptr<MetricsServer> metrics_server;
        if (!options.metrics.empty()) {
            gauge_reader = std::make_unique<GaugeReader>(options.db, options.name, options.connect_timeout, metrics,
                                                         options.transport == "wal" ? options.wal_slot : std::string());
            metrics_server = std::make_unique<MetricsServer>(options.metrics, metrics, options.name);
            spdlog::info("metrics on http://{}/metrics", options.metrics);
        }
        HeartbeatWriter heartbeat(options.db, options.connect_timeout,
                                  HeartbeatIdentity{options.name, options.transport == "wal" ? "wal" : "table",
                                                    sink->describe(), options.heartbeat_interval},
                                  metrics);
        SignalFd signals;
        SystemdNotifier notifier;
        Relay relay(options, reparse, std::move(sink), metrics, signals, notifier);
        int rc = relay.run();
        heartbeat.stopped_cleanly();
        return rc;
    } catch (const SessionRequired& e) {
        // A transaction pool: restarting cannot help (the units do not restart on this status).
        return fail(e.what(), kExitSessionRequired);
    } catch (const SinkError& e) {
        return fail(e.what());
    } catch (const SourceError& e) {
        return fail(e.what());
    } catch (const std::exception& e) {
        return fail(e.what());
    }
}
