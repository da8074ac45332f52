#include "pages/overview.hpp"

#include "html.hpp"
#include "pages/format.hpp"
#include "percent_encoding.hpp"

#include <sstream>

namespace once::console {

namespace {

constexpr double kOldestReadyLimit = 300;   // seconds a ready message may wait
constexpr double kRelayIdleLimit = 120;     // seconds a relay may be silent

}  // namespace

OverviewModel load_overview(Tx& tx) {
    auto topics = tx.query("SELECT t.*, extract(epoch FROM now() - t.oldest_ready) AS age FROM once.console_topics() t");
    auto counts = tx.query("SELECT status, n FROM once.console_saga_counts()");
    auto relays = tx.query("SELECT r.*, extract(epoch FROM now() - r.last_activity) AS idle FROM once.console_relays() r");
    OverviewModel m;
    for (int i = 0; i < topics.size(); ++i) {
        TopicRow t{topics(i, "topic"), topics(i, "ready"), topics(i, "delayed"), topics(i, "in_flight"),
                   topics(i, "blocked"), topics(i, "dead"), std::nullopt};
        if (!topics.is_null(i, "age")) t.age = std::stod(topics(i, "age"));
        m.topics.push_back(std::move(t));
    }
    for (int i = 0; i < relays.size(); ++i)
        m.relays.push_back({relays(i, "relay"), relays(i, "connections"), relays(i, "client"), relays(i, "connected_since"),
                            relays.is_null(i, "idle") ? 0 : std::stod(relays(i, "idle"))});
    for (int i = 0; i < counts.size(); ++i) m.saga_counts[counts.get(i, 0)] = counts.get(i, 1);
    m.beats = load_relays(tx).rows;
    m.wal = load_wal(tx);
    for (const WalSlotRow& s : m.wal.slots)
        if (!s.active) m.idle_slots.push_back(s.slot);
    return m;
}

Attention overview_attention(const OverviewModel& m) {
    Attention a;
    for (auto& t : m.topics) {
        double age = t.age.value_or(0);
        std::string why;
        if (std::stol(t.dead)) why += "dead letters; ";
        if (std::stol(t.blocked)) why += "blocked keys; ";
        if (age > kOldestReadyLimit) why += "oldest ready message waits " + age_text(age) + "; ";
        if (!why.empty()) { ++a.rows; why.resize(why.size() - 2); }
        a.topic_reasons.push_back(why);
    }
    for (auto& r : m.relays) {
        bool stalled = r.idle > kRelayIdleLimit;
        if (stalled) ++a.rows;
        a.relay_stalled.push_back(stalled);
    }
    long ready = 0;
    for (auto& t : m.topics) ready += std::stol(t.ready);
    a.no_relay_while_ready = m.relays.empty() && ready > 0;
    if (a.no_relay_while_ready) ++a.rows;
    bool any_alive = false;
    for (auto& r : m.beats) any_alive |= r.alive;
    // (not when the row above already says no relay is connected, nor when relays are
    // connected and none beats: relays older than heartbeats)
    bool nobody_while_waiting = !any_alive && (ready > 0 || !m.idle_slots.empty());
    a.no_relay_alive_while_waiting = nobody_while_waiting && !a.no_relay_while_ready && !(m.beats.empty() && !m.relays.empty());
    if (a.no_relay_alive_while_waiting) ++a.rows;
    for (auto& r : m.beats) {
        bool red = !r.alive && (r.state != "stopped" || nobody_while_waiting);
        if (red) ++a.rows;
        a.beat_red.push_back(red);
    }
    auto failed = m.saga_counts.find("failed");
    a.failed_sagas = failed != m.saga_counts.end() && !failed->second.empty() && failed->second != "0";
    if (a.failed_sagas) ++a.rows;
    for (auto& s : m.wal.slots) {
        a.wal_slot_reasons.push_back(wal_slot_attention(s));
        if (!a.wal_slot_reasons.back().empty()) ++a.rows;
    }
    return a;
}

std::string render_overview(const OverviewModel& m, const Attention& a) {
    std::ostringstream b;
    // Rates between the samples of the last minutes (pg_stat_all_tables: rows in, rows out).
    b << "<h2>Send and ack rates</h2><table id=rates><tr><th>sent (rows into once.outbox)</th><td>"
      << sparkline_svg("rate-sent", m.rates.sent, "msg/s") << "</td></tr><tr><th>acked (rows out of once.outbox)</th><td>"
      << sparkline_svg("rate-acked", m.rates.acked, "msg/s") << "</td></tr></table><p class=muted>Per second, one bar per "
      << m.rate_interval_s << " s (the last " << m.rate_intervals
      << " intervals), from PostgreSQL's table statistics: a discard counts as an ack, a locked relay's nack as both.</p>";
    b << "<h2>Outbox per topic</h2><table id=topics><tr><th>topic</th><th>ready</th><th>delayed</th><th>in flight</th>"
         "<th>blocked</th><th>dead</th><th>oldest ready</th><th>needs attention</th></tr>";
    for (size_t i = 0; i < m.topics.size(); ++i) {
        const TopicRow& t = m.topics[i];
        const std::string& why = a.topic_reasons[i];
        b << "<tr" << (why.empty() ? "" : " class=attn") << "><td><a href=\"/dead?topic=" << relay::percent_encode(t.topic) << "\">"
          << esc(t.topic) << "</a></td>" << count_cell(t.ready) << count_cell(t.delayed) << count_cell(t.in_flight)
          << count_cell(t.blocked) << count_cell(t.dead) << "<td>" << (t.age ? age_text(*t.age) : "") << "</td><td>"
          << esc(why) << "</td></tr>";
    }
    if (m.topics.empty()) b << "<tr><td colspan=8 class=muted id=outbox-empty>" << esc(empty_outbox_text(m.wal)) << "</td></tr>";
    b << "</table><p class=muted>Counts stop at " << kCap << " per topic and kind (shown as " << kCap
      << "+), so this page costs the same with a million messages waiting. Ready, delayed and in flight are counted "
         "over the first " << kCap << " pending messages in claim order.</p>";
    // With the WAL transport most messages are no rows: their backlog is the slots'.
    if (m.wal.transport == "wal" && !m.topics.empty()) b << "<p id=wal-note>" << esc(wal_backlog_note(m.wal)) << "</p>";
    if (m.wal.transport == "wal" || !m.wal.slots.empty())
        b << "<h2><a href=\"/wal\">WAL transport</a></h2>" << render_wal_slots_table(m.wal);
    b << "<h2>Relays connected</h2><table id=relays><tr><th>relay</th><th>connections</th><th>from</th>"
         "<th>connected since</th><th>last activity</th></tr>";
    for (size_t i = 0; i < m.relays.size(); ++i) {
        const RelayRow& r = m.relays[i];
        bool stale = a.relay_stalled[i];
        b << "<tr" << (stale ? " class=attn" : "") << "><td>" << esc(r.relay) << "</td><td class=num>" << r.connections
          << "</td><td>" << esc(r.client) << "</td><td>" << ts(r.connected_since) << "</td><td>" << age_text(r.idle)
          << " ago" << (stale ? " (stalled?)" : "") << "</td></tr>";
    }
    if (m.relays.empty()) {
        bool waiting = a.no_relay_while_ready;
        b << "<tr" << (waiting ? " class=attn" : "") << "><td colspan=5>No relay is connected to this database"
          << (waiting ? ": ready messages wait for one" : "") << ".</td></tr>";
    }
    b << "</table>";
    b << "<h2>Relays' heartbeats</h2><table id=relay-beats><tr><th>relay</th><th>host</th><th>state</th>"
         "<th>last seen</th></tr>";
    if (a.no_relay_alive_while_waiting) {
        long ready = 0;
        for (auto& t : m.topics) ready += std::stol(t.ready);
        std::string what;
        if (ready > 0) what = std::to_string(ready) + (ready >= kCap ? "+" : "") + " ready message(s) wait in the outbox";
        for (auto& s : m.idle_slots) what += (what.empty() ? "" : "; ") + std::string("nobody streams WAL slot ") + s;
        b << "<tr class=attn id=no-relay><td colspan=4>No relay is alive: " << esc(what) << ".</td></tr>";
    }
    for (size_t i = 0; i < m.beats.size(); ++i) {
        const RelayBeatRow& r = m.beats[i];
        b << "<tr" << (a.beat_red[i] ? " class=attn" : "") << "><td><a href=\"/relays\">" << esc(r.relay) << "</a></td><td>"
          << esc(r.host) << "</td><td>" << esc(r.state) << "</td><td>"
          << (r.alive ? "" : "relay " + esc(r.relay) + " last seen ") << age_text(r.age) << " ago</td></tr>";
    }
    if (m.beats.empty()) b << "<tr><td colspan=4 class=muted>No relay has written a heartbeat to this database.</td></tr>";
    b << "</table>";
    b << "<h2>Sagas</h2><table id=saga-counts><tr>";
    static const char* statuses[] = {"running", "compensating", "failed", "completed", "compensated"};
    for (auto* st : statuses) b << "<th>" << st << "</th>";
    b << "</tr><tr" << (a.failed_sagas ? " class=attn" : "") << ">";
    for (auto* st : statuses) {
        auto it = m.saga_counts.find(st);
        std::string n = it == m.saga_counts.end() ? "" : it->second;
        b << "<td class=num><a href=\"/sagas?status=" << st << "\">"
          << (std::stol(n.empty() ? "0" : n) >= kCap ? std::to_string(kCap) + "+" : n) << "</a></td>";
    }
    b << "</tr></table>";
    std::string head = a.rows ? "<div class=error id=attention>" + std::to_string(a.rows) +
                                    " row(s) need attention (marked red).</div>"
                              : "<div class=flash id=attention>Nothing needs attention.</div>";
    return head + b.str();
}

}  // namespace once::console
