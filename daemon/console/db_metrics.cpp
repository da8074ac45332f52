#include "db_metrics.hpp"

#include "prometheus_text.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>

namespace once::console {

using relay::escape_label_value;
using relay::format_metric_value;

namespace {

struct Family {
    const char* name;
    const char* help;
};

// Prometheus text of several databases: each family's HELP and TYPE once, followed by the
// samples of every database (the format allows a family only once per scrape).
class Text {
public:
    void family(const Family& f) {
        for (size_t i = 0; i < families_.size(); ++i)
            if (families_[i].name == f.name) { current_ = i; return; }
        families_.push_back({f.name, std::string("# HELP ") + f.name + " " + f.help + "\n# TYPE " + f.name + " gauge\n"});
        current_ = families_.size() - 1;
    }
    void sample(const char* name, const std::vector<std::pair<const char*, std::string>>& labels, double v) {
        std::string& out = families_[current_].text;
        out += name;
        out += '{';
        bool first = true;
        for (const auto& [k, val] : labels) {
            if (!first) out += ',';
            first = false;
            out += k;
            out += "=\"" + escape_label_value(val) + "\"";
        }
        out += "} " + format_metric_value(v) + "\n";
    }
    std::string take() {
        std::string out;
        for (auto& f : families_) out += f.text;
        families_.clear();
        return out;
    }

private:
    struct Rendered {
        std::string name;
        std::string text;
    };
    std::vector<Rendered> families_;
    size_t current_ = 0;
};

void render_view(Text& t, const DbView& v, std::set<std::string>& seen_topics);

}  // namespace

std::string render_db_metrics(const DbView& v, std::set<std::string>& seen_topics) {
    Text t;
    render_view(t, v, seen_topics);
    return t.take();
}

std::string render_db_metrics(const std::vector<DbView>& views, std::vector<std::set<std::string>>& seen_topics) {
    Text t;
    for (size_t i = 0; i < views.size(); ++i) render_view(t, views[i], seen_topics.at(i));
    return t.take();
}

namespace {

void render_view(Text& t, const DbView& v, std::set<std::string>& seen_topics) {
    const std::string& db = v.database;
    t.family({"once_db_up", "1 when once-console read the database for this scrape"});
    t.sample("once_db_up", {{"database", db}}, v.up ? 1 : 0);
    if (!v.up) return;
    t.family({"once_db_metrics_read_seconds", "how long reading these values took"});
    t.sample("once_db_metrics_read_seconds", {{"database", db}}, v.read_seconds);

    t.family({"once_db_relay_heartbeat_age_seconds", "seconds since each relay's last heartbeat (once.relay_heartbeats)"});
    for (const auto& r : v.relays)
        t.sample("once_db_relay_heartbeat_age_seconds",
                 {{"database", db}, {"relay", r.relay}, {"host", r.host}, {"transport", r.transport}, {"state", r.state}},
                 r.age_seconds);
    t.family({"once_db_relay_alive", "1 while a relay beats (within two of its intervals), is connected and has not stopped"});
    for (const auto& r : v.relays)
        t.sample("once_db_relay_alive", {{"database", db}, {"relay", r.relay}, {"host", r.host}}, r.alive ? 1 : 0);
    t.family({"once_db_relay_messages_per_second", "messages each relay acknowledged per second, as of its last heartbeat"});
    for (const auto& r : v.relays)
        t.sample("once_db_relay_messages_per_second", {{"database", db}, {"relay", r.relay}, {"host", r.host}},
                 r.messages_per_s);
    t.family({"once_db_relays_alive", "relays of this database that are alive"});
    t.sample("once_db_relays_alive", {{"database", db}},
             static_cast<double>(std::count_if(v.relays.begin(), v.relays.end(), [](const RelayBeat& r) { return r.alive; })));

    t.family({"once_db_wal_slot_retained_bytes", "WAL a logical replication slot of this database holds back from the current position"});
    for (const auto& s : v.slots)
        if (s.retained_bytes) t.sample("once_db_wal_slot_retained_bytes", {{"database", db}, {"slot", s.slot}},
                                       static_cast<double>(*s.retained_bytes));
    t.family({"once_db_wal_slot_safe_bytes", "WAL that may still be written before max_slot_wal_keep_size invalidates the slot"});
    for (const auto& s : v.slots)
        if (s.safe_bytes) t.sample("once_db_wal_slot_safe_bytes", {{"database", db}, {"slot", s.slot}},
                                   static_cast<double>(*s.safe_bytes));
    t.family({"once_db_wal_slot_active", "1 while a process streams the slot"});
    for (const auto& s : v.slots) t.sample("once_db_wal_slot_active", {{"database", db}, {"slot", s.slot}}, s.active ? 1 : 0);

    // Topics: what the database has now, then the ones seen before with nothing now.
    std::map<std::string, TopicState> topics;
    for (const auto& tp : v.topics) topics[tp.topic] = tp;
    for (const auto& name : seen_topics)
        if (!topics.count(name)) topics[name].topic = name;
    for (const auto& [name, tp] : topics) seen_topics.insert(name);
    t.family({"once_db_outbox_backlog", "messages of the topic in the outbox table, not dead: ready, delayed, in flight, blocked"});
    for (const auto& [name, tp] : topics)
        t.sample("once_db_outbox_backlog", {{"database", db}, {"topic", name}},
                 static_cast<double>(tp.ready + tp.delayed + tp.in_flight + tp.blocked));
    t.family({"once_db_outbox_oldest_ready_age_seconds", "age of the topic's oldest message due for delivery; 0 when none is"});
    for (const auto& [name, tp] : topics)
        t.sample("once_db_outbox_oldest_ready_age_seconds", {{"database", db}, {"topic", name}}, tp.oldest_ready_age);
    t.family({"once_db_outbox_dead", "dead letters of the topic (0 for a topic seen before without any)"});
    for (const auto& [name, tp] : topics)
        t.sample("once_db_outbox_dead", {{"database", db}, {"topic", name}}, static_cast<double>(tp.dead));
    t.family({"once_db_outbox_retrying", "messages of the topic that failed at least once and wait to be retried"});
    for (const auto& [name, tp] : topics)
        t.sample("once_db_outbox_retrying", {{"database", db}, {"topic", name}}, static_cast<double>(tp.retrying));
    t.family({"once_db_outbox_oldest_retrying_age_seconds", "age of the topic's oldest retrying message; 0 when none"});
    for (const auto& [name, tp] : topics)
        t.sample("once_db_outbox_oldest_retrying_age_seconds", {{"database", db}, {"topic", name}}, tp.oldest_retrying_age);

    t.family({"once_db_blocked_keys", "ordering keys held back by a dead head (counted up to 500)"});
    t.sample("once_db_blocked_keys", {{"database", db}}, static_cast<double>(v.blocked_keys));
    t.family({"once_db_oldest_blocked_key_age_seconds", "seconds since the head of the longest-blocked key died; 0 when none"});
    t.sample("once_db_oldest_blocked_key_age_seconds", {{"database", db}}, v.oldest_blocked_key_age);
}

}  // namespace

namespace {
double num(const Rows& r, int row, const char* col) {
    auto v = r.optional(row, col);
    return v ? std::strtod(v->c_str(), nullptr) : 0;
}
int64_t count(const Rows& r, int row, const char* col) {
    auto v = r.optional(row, col);
    return v ? std::strtoll(v->c_str(), nullptr, 10) : 0;
}
}  // namespace

DbView read_db_metrics(const DbConfig& cfg) {
    auto start = std::chrono::steady_clock::now();
    DbView v;
    Tx tx(cfg, Role::viewer, true);
    v.database = tx.query("SELECT pg_catalog.current_database()").get(0, 0);
    auto relays = tx.query("SELECT relay, host, transport, state, age_seconds, alive, messages_per_s "
                           "FROM once.console_relay_heartbeats()");
    for (int i = 0; i < relays.size(); ++i)
        v.relays.push_back(RelayBeat{relays(i, "relay"), relays(i, "host"), relays(i, "transport"), relays(i, "state"),
                                     num(relays, i, "age_seconds"), relays(i, "alive") == "t", num(relays, i, "messages_per_s")});
    auto slots = tx.query("SELECT slot_name AS slot, active, retained_bytes, safe_bytes FROM once.console_wal_slots()");
    for (int i = 0; i < slots.size(); ++i) {
        WalSlot s{slots(i, "slot"), slots(i, "active") == "t", std::nullopt, std::nullopt};
        if (auto b = slots.optional(i, "retained_bytes")) s.retained_bytes = std::strtoll(b->c_str(), nullptr, 10);
        if (auto b = slots.optional(i, "safe_bytes")) s.safe_bytes = std::strtoll(b->c_str(), nullptr, 10);
        v.slots.push_back(std::move(s));
    }
    std::map<std::string, TopicState> topics;
    auto counts = tx.query("SELECT topic, ready, delayed, in_flight, blocked, dead, "
                           "COALESCE(extract(epoch FROM now() - oldest_ready), 0) AS oldest_ready_age "
                           "FROM once.console_topics()");
    for (int i = 0; i < counts.size(); ++i) {
        TopicState& t = topics[counts(i, "topic")];
        t.topic = counts(i, "topic");
        t.ready = count(counts, i, "ready");
        t.delayed = count(counts, i, "delayed");
        t.in_flight = count(counts, i, "in_flight");
        t.blocked = count(counts, i, "blocked");
        t.dead = count(counts, i, "dead");
        t.oldest_ready_age = std::max(0.0, num(counts, i, "oldest_ready_age"));
    }
    auto retrying = tx.query("SELECT topic, retrying, extract(epoch FROM now() - oldest_created) AS age FROM once.console_retrying_counts()");
    for (int i = 0; i < retrying.size(); ++i) {
        TopicState& t = topics[retrying(i, "topic")];
        t.topic = retrying(i, "topic");
        t.retrying = count(retrying, i, "retrying");
        t.oldest_retrying_age = std::max(0.0, num(retrying, i, "age"));
    }
    for (auto& [name, t] : topics) v.topics.push_back(std::move(t));
    auto blocked = tx.query("SELECT count(*) AS n, COALESCE(extract(epoch FROM now() - min(dead_at)), 0) AS age "
                            "FROM once.console_blocked_keys(500) WHERE reason = 'dead'");
    v.blocked_keys = count(blocked, 0, "n");
    v.oldest_blocked_key_age = std::max(0.0, num(blocked, 0, "age"));
    tx.commit();
    v.up = true;
    v.read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return v;
}

}  // namespace once::console
