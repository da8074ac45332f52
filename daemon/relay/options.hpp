// once-relay's settings: one option table feeds both the command line and the config file
// (INI style "name = value", the same names without "--"); the command line wins.
#pragma once

#include "duration.hpp"

#include <string>
#include <vector>

namespace once::relay {

struct Options {
    std::string db;                    // libpq conninfo of the database to relay from
    std::string sink;                  // sink URI
    std::string source;                // inbound mode: nats://...?stream=S&consumer=C; --db is then the inbox database
    std::string name = "once-relay";   // relay name (claims, logs, inbox source)
    std::vector<std::string> topics;   // topic patterns; empty = all topics
    int batch = 100;                   // messages per claim
    Millis lease{30000};               // claim lease
    Millis poll_interval{1000};        // fallback poll when no wake-up arrives
    int max_in_flight = 256;           // unacknowledged publishes at the sink
    std::string metrics;               // host:port for /metrics and /healthz; empty = off
    std::string log_level = "info";    // trace debug info warn error off
    std::string config;                // config file (INI); empty = none
    bool maintenance = true;           // run once.purge / once.saga_tick on timers
    std::string synchronous_commit = "off";  // for the relay's own claim/ack transactions
    std::string transport = "table";   // table | wal: also stream the WAL transport's slot (claim/wal_stream.hpp)
    std::string wal_slot = "once_relay";          // --transport wal: the logical replication slot
    std::string wal_publication = "once_outbox";  // and its publication
    bool create_wal_slot = false;      // create the publication and the slot, then exit
    bool drop_wal_slot = false;        // drop the slot, then exit
    // Before PostgreSQL 17 with physical standbys: stream anyway, accepting that a promotion
    // loses the slot (wal/slot_health.hpp).
    bool wal_accept_slot_loss_on_failover = false;
    std::string claim_mode = "auto";   // locked | leased | auto: the sink's preference (claim/claim_mode.hpp)
    Millis purge_interval{60000};
    Millis saga_tick_interval{1000};
    Millis sink_timeout{10000};        // one publish: HTTP request, NATS PubAck, inbox call
    Millis connect_timeout{5000};      // opening a connection to the database or the sink
    Millis shutdown_timeout{10000};    // SIGTERM: bound for draining in-flight work
    Millis reconnect_max{30000};       // cap of the reconnect backoff
    Millis stats_interval{60000};      // periodic throughput summary at info
    Millis heartbeat_interval{10000};  // once.relay_heartbeat (docs/relay.md, "Heartbeats")
    // Secrets come from files (or systemd credentials), never from the command line.
    std::vector<std::string> webhook_secret_files;   // http(s): Standard Webhooks signing secrets
    std::string nats_token_file;       // nats: the token, when the URL carries none
    bool cloudevents = false;          // http(s), nats: CloudEvents 1.0 binary content mode
    bool http_body_envelope = false;   // http(s): the body is sinks/webhook_envelope.hpp's, not the payload
    std::string cloudevents_source;    // ce-source; empty = /pg_once/<database>/<name>
    // --listen-webhooks: receive signed webhooks into the --db database's inbox instead of
    // relaying its outbox (inbound/webhook_receiver.hpp).
    std::string listen_webhooks;                      // host:port; empty = off
    std::vector<std::string> webhooks_secret_files;   // the senders' Standard Webhooks secrets
    std::string webhooks_source;                      // inbox source; empty = --name
    size_t webhooks_max_body = 1024 * 1024;           // bytes
    int webhooks_concurrency = 64;                    // requests being delivered at once
    Millis webhooks_tolerance{300000};                // webhook-timestamp, either direction
    bool db_from_command_line = false;     // --db was given as an argument (visible in ps)
    bool sink_from_command_line = false;   // --sink likewise
    bool check_config = false;
    bool show_help = false;
    bool show_version = false;
};

// Parses argv (and --config FILE). Throws std::runtime_error with a user-facing message
// (unknown option, bad value, missing --db/--sink, unreadable config file).
Options parse_options(int argc, const char* const argv[], std::string* help_text = nullptr);

// Throws std::runtime_error naming the first invalid setting.
void validate(const Options& o);

// Settings that differ between a and b and only take effect after a restart.
std::vector<std::string> restart_only_changes(const Options& a, const Options& b);

// A reload: copies the running restart-only settings into `fresh` and returns the names of
// those that `fresh` wanted to change.
std::vector<std::string> keep_restart_only(const Options& running, Options& fresh);

// Comma-separated topic patterns -> list (empty items dropped).
std::vector<std::string> split_list(const std::string& s);

}  // namespace once::relay
