#include "pages/wal_slots.hpp"

#include "html.hpp"
#include "pages/format.hpp"

#include <cstdio>
#include <sstream>

namespace once::console {

WalModel load_wal(Tx& tx) {
    WalModel m;
    auto t = tx.query("SELECT current_setting('once.transport', true)");
    if (t.size() == 1 && !t.null(0, 0)) m.transport = t.get(0, 0);
    auto r = tx.query("SELECT * FROM once.console_wal_slots()");
    for (int i = 0; i < r.size(); ++i) {
        WalSlotRow s;
        s.slot = r(i, "slot_name");
        s.plugin = r(i, "plugin");
        s.active = r(i, "active") == "t";
        s.walsender_pid = r.optional(i, "walsender_pid");
        s.wal_status = r(i, "wal_status");
        s.confirmed_lsn = r(i, "confirmed_flush_lsn");
        if (!r.is_null(i, "retained_bytes")) s.retained_bytes = std::stoll(r(i, "retained_bytes"));
        if (!r.is_null(i, "unconfirmed_bytes")) s.unconfirmed_bytes = std::stoll(r(i, "unconfirmed_bytes"));
        if (!r.is_null(i, "lag_seconds")) s.lag_seconds = std::stod(r(i, "lag_seconds"));
        s.client = r(i, "client");
        s.last_reply = r(i, "last_reply");
        m.slots.push_back(std::move(s));
    }
    return m;
}

std::string wal_slot_attention(const WalSlotRow& s) {
    if (s.wal_status == "lost") return "invalidated: its WAL is gone (recreate it, see operations)";
    if (s.wal_status == "unreserved") return "over max_slot_wal_keep_size: the next checkpoint invalidates it";
    if (!s.active) return "no relay streams it: its messages wait";
    return "";
}

std::string bytes_text(long long bytes) {
    if (bytes < 0) bytes = 0;
    if (bytes == 1) return "1 byte";
    if (bytes < 1024) return std::to_string(bytes) + " bytes";
    static const char* units[] = {"kB", "MB", "GB", "TB"};
    double v = static_cast<double>(bytes) / 1024;
    int u = 0;
    while (v >= 1024 && u < 3) { v /= 1024; ++u; }
    char out[32];
    std::snprintf(out, sizeof out, "%.1f %s", v, units[u]);
    return out;
}

namespace {

std::string slot_names(const WalModel& m) {
    std::string names;
    for (size_t i = 0; i < m.slots.size(); ++i) {
        if (i) names += i + 1 == m.slots.size() ? " and " : ", ";
        names += m.slots[i].slot;
    }
    return names;
}

}  // namespace

std::string wal_backlog_note(const WalModel& m) {
    if (m.transport != "wal") return "";
    if (m.slots.empty())
        return "once.transport = 'wal', but this database has no logical replication slot: unkeyed messages sent now "
               "are in the WAL only, and no relay can read them.";
    long long unconfirmed = 0;
    for (auto& s : m.slots) unconfirmed += s.unconfirmed_bytes.value_or(0);
    return "once.transport = 'wal': unkeyed messages are no rows of the outbox table; they wait in the replication slot" +
           std::string(m.slots.size() == 1 ? " " : "s ") + slot_names(m) + " (" + bytes_text(unconfirmed) +
           " of WAL not yet confirmed).";
}

std::string empty_outbox_text(const WalModel& m) {
    if (m.transport != "wal") return "The outbox is empty.";
    return "The outbox table is empty. " + wal_backlog_note(m);
}

std::string render_wal_slots_table(const WalModel& m) {
    std::ostringstream b;
    b << "<table id=wal-slots><tr><th>slot</th><th>streamed</th><th>walsender pid</th><th>wal_status</th>"
         "<th>confirmed up to</th><th>WAL retained</th><th>not yet confirmed</th><th>lag</th><th>client</th>"
         "<th>needs attention</th></tr>";
    for (auto& s : m.slots) {
        std::string why = wal_slot_attention(s);
        b << "<tr" << (why.empty() ? "" : " class=attn") << " data-slot=\"" << esc(s.slot) << "\"><td class=slot>"
          << esc(s.slot) << (s.plugin == "pgoutput" ? "" : " <span class=muted>(" + esc(s.plugin) + ")</span>")
          << "</td><td class=active>" << (s.active ? "yes" : "no") << "</td><td class=pid>"
          << esc(s.walsender_pid.value_or("—")) << "</td><td class=wal-status>" << esc(s.wal_status.empty() ? "—" : s.wal_status)
          << "</td><td class=lsn>" << esc(s.confirmed_lsn) << "</td><td class=\"num retained\" data-bytes=\""
          << (s.retained_bytes ? std::to_string(*s.retained_bytes) : "") << "\">"
          << (s.retained_bytes ? bytes_text(*s.retained_bytes) : "—") << "</td><td class=\"num unconfirmed\" data-bytes=\""
          << (s.unconfirmed_bytes ? std::to_string(*s.unconfirmed_bytes) : "") << "\">"
          << (s.unconfirmed_bytes ? bytes_text(*s.unconfirmed_bytes) : "—") << "</td><td class=\"num lag\">";
        if (s.lag_seconds) {
            char lag[32];
            std::snprintf(lag, sizeof lag, "%.1f s", *s.lag_seconds);
            b << lag;
        } else {
            b << "—";
        }
        b << "</td><td>" << esc(s.client) << "</td><td>" << esc(why) << "</td></tr>";
    }
    if (m.slots.empty()) b << "<tr><td colspan=10 class=muted>This database has no logical replication slot.</td></tr>";
    b << "</table>";
    return b.str();
}

std::string render_wal(const WalModel& m) {
    std::ostringstream b;
    b << "<p id=transport>once.transport: <b>" << esc(m.transport.empty() ? "table (not set)" : m.transport) << "</b>"
      << (m.transport == "wal"
              ? ". Unkeyed messages are not rows of once.outbox: each waits in the WAL until the relay reading its slot "
                "has published it and confirmed the slot past it. Keyed, delayed and written-back messages are rows, "
                "as with the table transport."
              : ". Messages are rows of once.outbox; a slot below is read only by relays started with --transport wal.")
      << " <span class=muted>(as the console's own session sees the setting: postgresql.conf, ALTER DATABASE, "
         "ALTER ROLE of its login)</span></p>";
    b << render_wal_slots_table(m);
    b << "<p class=muted>WAL retained: from the slot's restart_lsn to the server's current position, what the slot keeps "
         "on disk. Not yet confirmed: from its confirmed_flush_lsn, the relay's backlog in bytes of WAL (every "
         "transaction's WAL counts, not only messages: pg_once cannot count the messages in a slot without decoding "
         "it). Lag: PostgreSQL's replay lag of the walsender (pg_stat_replication), measured from the relay's replies; "
         "— when no relay streams the slot or none was measured. Read with once.console_wal_slots().</p>";
    return b.str();
}

}  // namespace once::console
