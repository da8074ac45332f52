#include "inbound/webhook_mode.hpp"

#include "credentials.hpp"
#include "inbound/webhook_receiver.hpp"
#include "options.hpp"
#include "signals.hpp"
#include "systemd_notify.hpp"
#include "uri.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <stdexcept>

namespace once::relay {

int run_webhook_receiver(const Options& o) {
    WebhookReceiverSettings s;
    s.address = o.listen_webhooks;
    s.conninfo = o.db;
    s.source = o.webhooks_source.empty() ? o.name : o.webhooks_source;
    s.max_body = o.webhooks_max_body;
    s.concurrency = static_cast<unsigned>(o.webhooks_concurrency);
    s.tolerance = std::chrono::duration_cast<std::chrono::seconds>(o.webhooks_tolerance);
    s.statement_timeout = o.sink_timeout;
    s.connect_timeout = o.connect_timeout;
    // Each --webhooks-secret-file, then the systemd credential, as the http sink's signing keys.
    std::vector<std::string> files = o.webhooks_secret_files;
    if (auto cred = credential_path("inbound-webhook-secret")) files.push_back(*cred);
    if (files.empty())
        throw std::runtime_error("--listen-webhooks needs the senders' secret(s): --webhooks-secret-file FILE "
                                 "or the systemd credential inbound-webhook-secret");
    for (const auto& f : files) {
        try {
            auto keys = parse_webhook_secret_file(read_secret_file(f, "webhook secret"));
            s.keys.insert(s.keys.end(), keys.begin(), keys.end());
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(std::string(e.what()) + " (in " + f + ")");
        }
    }
    size_t nkeys = s.keys.size();
    SignalFd signals;
    SystemdNotifier notifier;
    WebhookReceiver receiver(std::move(s));
    if (o.check_config) {
        std::printf("once-relay: configuration OK (inbox database %s, webhooks on %s, %zu secret(s))\n",
                    redact_conninfo(o.db).c_str(), o.listen_webhooks.c_str(), nkeys);
        return 0;
    }
    spdlog::info("receiving webhooks on http://{}/webhooks into the inbox (source \"{}\"), verifying Standard Webhooks "
                 "signatures with {} secret(s)",
                 o.listen_webhooks, o.webhooks_source.empty() ? o.name : o.webhooks_source, nkeys);
    notifier.ready();
    for (;;) {
        int wd = notifier.watchdog_tick();
        pollfd p{signals.fd(), POLLIN, 0};
        ::poll(&p, 1, wd);
        SignalEvents ev;
        signals.read(ev);
        if (ev.reload) spdlog::info("SIGHUP: --listen-webhooks reads its settings at start only; restart it to change them");
        if (ev.stop) break;
    }
    notifier.stopping();
    spdlog::info("stopping: finishing the webhooks being delivered (up to {})", format_duration(o.shutdown_timeout));
    receiver.stop(o.shutdown_timeout);
    spdlog::info("stopped");
    return 0;
}

}  // namespace once::relay
