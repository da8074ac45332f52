#include "pages/relays.hpp"

#include "html.hpp"
#include "pages/format.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace once::console {

namespace {
double num(const std::optional<std::string>& v) { return v ? std::strtod(v->c_str(), nullptr) : 0; }
std::string rate_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.1f", v);
    return buf;
}
}  // namespace

RelaysModel load_relays(Tx& tx) {
    auto rows = tx.query("SELECT * FROM once.console_relay_heartbeats()");
    RelaysModel m;
    for (int i = 0; i < rows.size(); ++i) {
        RelayBeatRow r;
        r.relay = rows(i, "relay");
        r.host = rows(i, "host");
        r.pid = rows(i, "pid");
        r.transport = rows(i, "transport");
        r.sink = rows(i, "sink");
        r.state = rows(i, "state");
        r.state_since = rows(i, "state_since");
        r.last_beat = rows(i, "last_beat");
        r.started_at = rows(i, "started_at");
        r.version = rows(i, "version");
        r.age = num(rows.optional(i, "age_seconds"));
        r.beat_interval = num(rows.optional(i, "beat_interval_seconds"));
        r.messages_per_s = num(rows.optional(i, "messages_per_s"));
        r.alive = rows(i, "alive") == "t";
        m.rows.push_back(std::move(r));
    }
    return m;
}

std::vector<bool> relays_red(const RelaysModel& m) {
    std::vector<bool> red;
    for (auto& r : m.rows) red.push_back(!r.alive);
    return red;
}

std::string render_relays(const RelaysModel& m) {
    std::ostringstream b;
    auto red = relays_red(m);
    b << "<p class=muted>Every relay writes a heartbeat to this database every --heartbeat-interval. A relay is alive while "
         "its last beat is at most two intervals old, it is connected, and it has not stopped; the others are red.</p>"
         "<table id=relay-heartbeats><tr><th>relay</th><th>host</th><th>pid</th><th>transport</th><th>sink</th>"
         "<th>state</th><th>last heartbeat</th><th>messages/s</th><th>started</th><th>version</th></tr>";
    for (size_t i = 0; i < m.rows.size(); ++i) {
        const RelayBeatRow& r = m.rows[i];
        b << "<tr" << (red[i] ? " class=attn" : "") << "><td>" << esc(r.relay) << "</td><td>" << esc(r.host)
          << "</td><td class=num>" << esc(r.pid) << "</td><td>" << esc(r.transport) << "</td><td>" << esc(r.sink)
          << "</td><td>" << esc(r.state) << " since " << ts(r.state_since) << "</td><td>" << age_text(r.age) << " ago"
          << (r.alive ? "" : r.state == "stopped" ? " (stopped)" : " (not alive)") << "</td><td class=num>"
          << rate_text(r.messages_per_s) << "</td><td>" << ts(r.started_at) << "</td><td>" << esc(r.version) << "</td></tr>";
    }
    if (m.rows.empty())
        b << "<tr class=attn><td colspan=10>No relay has written a heartbeat to this database.</td></tr>";
    b << "</table>";
    return b.str();
}

}  // namespace once::console
